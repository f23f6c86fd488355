"""ktool: a toolkit for the people who run Apache Kafka."""

__version__ = "0.1.0"
