#!/usr/bin/env python3
"""A stand-in for the MongoDB-maintained py-tpcc's tpcc.py, for tests only.

It is not py-tpcc (none of its code is here); it behaves as that one does
where benchcage depends on it, as a user of it found:

- It runs from its own directory and finds its drivers as
  ./drivers/*driver.py; its flags are py-tpcc's (argparse refuses others).
- The load: the coordinator loads ITEM, then one worker process per
  client loads its share of the warehouses (WAREHOUSE, DISTRICT,
  CUSTOMER, STOCK). A worker that fails logs its error and the program
  still exits 0.
- Every process reads the `[mongodb]` section through the driver, which
  writes its default `uri` into the config it is handed when it has none
  (drivers/mongodbdriver.py): without a `uri` every worker goes to
  localhost:27017.
- Documents are written with pymongo 3's `Collection.insert`, which
  pymongo 4 removed.
- A run (--no-load) has each worker ask the server for buildinfo, then prints the
  maintained version's results table and TpmC line.
"""

import argparse
import configparser
import glob
import logging
import multiprocessing
import os
import sys
import time

HERE = os.path.dirname(os.path.realpath(__file__))
sys.path.insert(0, HERE)
sys.dont_write_bytecode = True  # nothing written beside the tool
from drivers.mongodbdriver import MongodbDriver  # noqa: E402

ITEMS = 100000
DISTRICTS = 10
CUSTOMERS = 3000  # per district
STOCK = 100000
BATCH = 5000


def batches(docs):
    batch = []
    for d in docs:
        batch.append(d)
        if len(batch) == BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def load_items(driver):
    for b in batches({"I_ID": i, "I_NAME": "item%d" % i, "I_PRICE": 1.0} for i in range(1, ITEMS + 1)):
        driver.load("ITEM", b)


def load_warehouse(driver, w):
    driver.load("WAREHOUSE", [{"W_ID": w, "W_YTD": 300000.0}])
    driver.load("DISTRICT", [{"D_ID": d, "D_W_ID": w, "D_NEXT_O_ID": 3001} for d in range(1, DISTRICTS + 1)])
    customers = (
        {"C_ID": c, "C_D_ID": d, "C_W_ID": w} for d in range(1, DISTRICTS + 1) for c in range(1, CUSTOMERS + 1)
    )
    for b in batches(customers):
        driver.load("CUSTOMER", b)
    for b in batches({"S_I_ID": i, "S_W_ID": w, "S_QUANTITY": 50} for i in range(1, STOCK + 1)):
        driver.load("STOCK", b)


def load_worker(config, warehouses):
    try:
        driver = MongodbDriver()
        driver.loadConfig(config)
        for w in warehouses:
            load_warehouse(driver, w)
    except Exception as e:
        logging.error("loader worker for warehouses %s failed: %s", warehouses, e)
        sys.exit(1)


def run_worker(config, q):
    driver = MongodbDriver()
    driver.loadConfig(config)
    driver.ping()
    q.put(1)


def main():
    logging.basicConfig(level=logging.INFO, format="%(asctime)s [%(funcName)s:%(lineno)d] %(levelname)s : %(message)s")
    drivers = [os.path.basename(d)[: -len("driver.py")] for d in glob.glob("./drivers/*driver.py")]
    a = argparse.ArgumentParser()
    a.add_argument("system", choices=drivers)
    a.add_argument("--config", type=open)
    a.add_argument("--warehouses", type=int, default=4)
    a.add_argument("--clients", type=int, default=1)
    a.add_argument("--duration", type=int, default=60)
    a.add_argument("--no-load", action="store_true")
    a.add_argument("--no-execute", action="store_true")
    args = a.parse_args()
    c = configparser.ConfigParser()
    c.read(os.path.realpath(args.config.name))
    config = dict(c.items(args.system))
    config["warehouses"] = args.warehouses
    logging.info("Initializing TPC-C benchmark using MongodbDriver")
    driver = MongodbDriver()
    driver.loadConfig(config)
    ctx = multiprocessing.get_context("fork")
    if not args.no_load:
        started = time.time()
        load_items(driver)
        shares = [list(range(1 + i, args.warehouses + 1, args.clients)) for i in range(args.clients)]
        workers = [ctx.Process(target=load_worker, args=(config, s)) for s in shares if s]
        for p in workers:
            p.start()
        for p in workers:
            p.join()
        # The workers' exit codes are not looked at.
        logging.info("Finished loading the data in %.1f seconds", time.time() - started)
    if args.no_execute:
        return 0
    q = ctx.Queue()
    workers = [ctx.Process(target=run_worker, args=(config, q)) for _ in range(args.clients)]
    for p in workers:
        p.start()
    for p in workers:
        p.join()
        if p.exitcode != 0:
            return 1
    n = 30 * args.clients * args.warehouses
    secs = args.duration
    head = "%-16s" * 13
    out = "=" * 70 + "\nExecution Results after %d seconds\n" % secs + "-" * 70 + "\n  "
    out += head % ("", "Complete", "Time (s)", "Percentage", "Retries", "minLatMs", "p50", "p75", "p90", "p95", "p99", "maxLatMs", "Aborts")
    for name, cnt in [("DELIVERY", n // 10), ("NEW_ORDER", n), ("PAYMENT", n)]:
        row = (name, cnt, "%.3f" % (cnt * 0.002), "33.3%", 0, 1.0, 2.0, 2.0, 2.0, 2.0, 3.0, 9.0, 0)
        out += "\n  " + head % row
    print(out)
    print("%s TpmC for %d WH: %d %d total %d durSec" % ("mongodb", args.warehouses, n * 60 // secs, n, secs))
    return 0


if __name__ == "__main__":
    sys.exit(main())
