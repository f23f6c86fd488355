"""The environment variables ktool reads ZooKeeper's settings from (zk/config.py reads them).

Apart from config.py, whose settings classes cost more to define than the rest of a command's options,
so that the options naming these variables in their help (cli/zk_options.py) are declared without it:
`ktool groups describe --help` reads no setting.
"""

from __future__ import annotations

ENV_CONNECT = "KTOOL_ZOOKEEPER"
ENV_AUTH = "KTOOL_ZK_AUTH"
ENV_CONFIG = "KTOOL_CONFIG"
ENV_KEY_PASSWORD = "KTOOL_ZK_KEY_PASSWORD"
