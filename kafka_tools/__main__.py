"""`python -m kafka_tools` runs the same program as `ktool`."""

from kafka_tools.cli.main import main

if __name__ == "__main__":
    main()
