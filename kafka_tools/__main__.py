"""`python -m kafka_tools` runs the same program as `ktool` (the console script calls `main` too)."""

# The C module beneath `signal`, built into the interpreter: importing signal.py reads and runs a file,
# a moment (0.3 s seen on a loaded machine) in which Ctrl-C would still get Python's traceback.
import _signal

# Ctrl-C and SIGTERM are ktool's from its first line: until its handlers are imported (cli/interrupts.py)
# a signal is only kept, then raised there: exit 130 or 143 in the start-up too, never a traceback.
_early: list[int] = []


def _keep(signum: int, frame: object) -> None:
    _early.append(signum)


for _signum in (_signal.SIGINT, _signal.SIGTERM):
    if _signal.getsignal(_signum) is not _signal.SIG_IGN:
        _signal.signal(_signum, _keep)


def main() -> None:
    from kafka_tools.cli import interrupts, start_up

    try:
        interrupts.install(last_resort=True)
        if _early:
            interrupts.raise_now(_early[0])
        # The collector is paused before Click and the command are imported (cli/start_up.py).
        start_up.pause_collection()
        from kafka_tools.cli.main import main as run

        run()
    except KeyboardInterrupt as exc:
        interrupts.exit_interrupted(exc)
    except SystemExit as exc:
        interrupts.exit_with(exc.code)


if __name__ == "__main__":
    main()
