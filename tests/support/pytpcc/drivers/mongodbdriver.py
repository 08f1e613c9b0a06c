"""The stand-in py-tpcc's MongoDB driver (see ../tpcc.py), for tests only.

loadConfig reads `uri` and takes `host`/`port` only when there is none;
then, as the MongoDB-maintained driver does, it fills every missing key
of the config it is handed with its default, `uri` among them, so that a
process handed the same config afterwards (a worker) reads the default
`uri`. A process whose `uri` is that default fails as it would against a
host where nothing listens on localhost:27017, without connecting: a test
never writes to a server it did not start.
"""

import pymongo

DEFAULT_CONFIG = {"uri": "mongodb://localhost:27017", "name": "tpcc", "denormalize": "True"}


class MongodbDriver:
    def loadConfig(self, config):
        default_uri = "uri" not in config
        for key, value in DEFAULT_CONFIG.items():
            config.setdefault(key, value)
        uri = config["uri"]
        if default_uri and "host" in config:
            uri = "mongodb://%s:%s" % (config["host"], config.get("port", "27017"))
        if uri.startswith(DEFAULT_CONFIG["uri"]):
            raise ConnectionError("localhost:27017: [Errno 111] Connection refused (ServerSelectionTimeoutError)")
        self.client = pymongo.MongoClient(uri, serverSelectionTimeoutMS=10000)
        self.database = self.client[config["name"]]

    def load(self, collection, docs):
        # pymongo 3's insert; pymongo 4 has no such method.
        self.database[collection].insert(docs)

    def ping(self):
        self.client.admin.command("buildinfo")
