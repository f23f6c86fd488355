// A LocalTieredStorage transferer (rsm.config.transferer.class) that copies as the default one does,
// then holds the copy while the file named by $KTOOL_TRANSFER_GATE exists, having written the target's
// path to "<gate>.held": a test sees a copy in progress, its files already in the store, and can kill
// the broker right then (tests/tiered/test_tiered_kill.py).

import java.io.File;
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.nio.file.StandardOpenOption;

import org.apache.kafka.server.log.remote.storage.Transferer;

public class SlowTransferer implements Transferer {
    @Override
    public void transfer(File from, File to) throws IOException {
        if (from.exists()) {
            Files.copy(from.toPath(), to.toPath());
        }
        hold(to);
    }

    @Override
    public void transfer(ByteBuffer from, File to) throws IOException {
        if (from != null && from.hasRemaining()) {
            try (FileChannel out = FileChannel.open(to.toPath(), StandardOpenOption.CREATE_NEW,
                                                    StandardOpenOption.WRITE)) {
                while (from.hasRemaining()) {
                    out.write(from);
                }
            }
        }
        hold(to);
    }

    private static void hold(File to) throws IOException {
        String gate = System.getenv("KTOOL_TRANSFER_GATE");
        if (gate == null || !Files.exists(Paths.get(gate))) {
            return;
        }
        Path held = Paths.get(gate + ".held");
        Files.write(held, (to.getPath() + "\n").getBytes(StandardCharsets.UTF_8), StandardOpenOption.CREATE,
                    StandardOpenOption.APPEND);
        while (Files.exists(Paths.get(gate))) {
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                return;
            }
        }
    }
}
