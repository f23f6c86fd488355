// One of Kafka's own command-line tools run on several argument lists in one JVM (a tool run is mostly
// the JVM's start and class loading: tests/support/modern.run_tool_batch). Args: the tool's main class.
// Stdin: one argument list a line, the arguments separated by tabs. For each, the tool's main runs as
// it is, its exit (Kafka's Exit.exit; the first one a run asks for is its code) caught instead of ending
// the JVM, what it printed on stdout captured; then on stdout one header line
// "#tool-batch EXIT_CODE BYTES" and the BYTES of its output.
// Its stderr goes to this process's stderr.
import java.io.BufferedReader;
import java.io.ByteArrayOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.charset.StandardCharsets;

public class ToolBatch {
    static final class Exited extends RuntimeException {
        final int code;

        Exited(int code) {
            super(null, null, false, false);
            this.code = code;
        }
    }

    // The first exit code a run asked for: a tool may exit inside a try that catches everything (4.x's
    // TopicCommand exits 0 in a finally, which its main's catch then reports as a failure, exiting 1)
    static Integer firstExit;

    // Kafka's Exit (org.apache.kafka.common.utils.Exit up to 3.x, ...utils.internals.Exit in 4.x): its exit
    // procedure replaced by one that throws, so a tool's Exit.exit ends the tool's run, not the JVM
    static void catchExit() throws Exception {
        Class<?> exit;
        try {
            exit = Class.forName("org.apache.kafka.common.utils.internals.Exit");
        } catch (ClassNotFoundException e) {
            exit = Class.forName("org.apache.kafka.common.utils.Exit");
        }
        Class<?> procedure = Class.forName(exit.getName() + "$Procedure");
        Object thrower = Proxy.newProxyInstance(
            procedure.getClassLoader(), new Class<?>[] {procedure}, (proxy, method, margs) -> {
                if (method.getName().equals("execute")) {
                    if (firstExit == null) {
                        firstExit = (Integer) margs[0];
                    }
                    throw new Exited((Integer) margs[0]);
                }
                return method.invoke(new Object(), margs);
            });
        exit.getMethod("setExitProcedure", procedure).invoke(null, thrower);
    }

    public static void main(String[] args) throws Exception {
        Method main = Class.forName(args[0]).getMethod("main", String[].class);
        catchExit();
        PrintStream out = System.out;
        BufferedReader in = new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            String[] toolArgs = line.isEmpty() ? new String[0] : line.split("\t", -1);
            ByteArrayOutputStream captured = new ByteArrayOutputStream();
            int code = 0;
            firstExit = null;
            System.setOut(new PrintStream(captured, true, "UTF-8"));
            try {
                main.invoke(null, (Object) toolArgs);
            } catch (InvocationTargetException e) {
                Throwable cause = e.getCause();
                if (!(cause instanceof Exited)) {
                    cause.printStackTrace();
                    code = 1;
                }
            } finally {
                System.out.flush();
                System.setOut(out);
            }
            if (firstExit != null) {
                code = firstExit;
            }
            byte[] bytes = captured.toByteArray();
            out.print("#tool-batch " + code + " " + bytes.length + "\n");
            out.write(bytes);
            out.flush();
        }
    }
}
