"""`python -m kafka_tools` runs the same program as `ktool` (the console script calls `main` too)."""

from kafka_tools.cli import start_up


def main() -> None:
    # The collector is paused before Click and the command are imported (cli/start_up.py).
    start_up.pause_collection()
    from kafka_tools.cli.main import main as run

    run()


if __name__ == "__main__":
    main()
