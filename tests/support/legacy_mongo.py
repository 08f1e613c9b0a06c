"""A small MongoDB server of an old wire version, for tests only.

--wire 0 behaves like a 2.4-era server (TokuMX 1.5 / 2.0): isMaster has no
maxWireVersion, writes arrive as OP_INSERT / OP_UPDATE / OP_DELETE followed
by getLastError, reads as OP_QUERY on the collection with OP_GET_MORE and
OP_KILL_CURSORS, indexes as inserts into system.indexes. The write and
find commands are refused ("no such cmd"), and OP_MSG closes the socket.

--wire 2 behaves like MongoDB 2.6: write commands, reads as at wire 0.

--wire 4 behaves like MongoDB 3.2: commands as OP_QUERY on <db>.$cmd,
including insert/update/delete/createIndexes and find/getMore/killCursors.
OP_MSG closes the socket, as on the real server.

The command `legacyStats` returns how many messages of each opcode and
of each command arrived, so tests can check what the client really sent,
and what acknowledgement and reads were asked for: the distinct arguments
of getLastError (`gleArgs`), the distinct writeConcern documents of the
write commands (`writeConcerns`, `{}` when a command had none), and how
many reads set the SecondaryOk bit of OP_QUERY (`readFlags`). Asked
`{legacyStats: 1, commandLog: 1}` it also returns every command received
but legacyStats itself, in order: `commandLog`, a list of `{db, command,
n}` with the whole command document and `n` its rank on its connection
(1 is a client's handshake).

Topologies, as MongoDB 3.2 (wire 4) or 2.4/2.6 (wire 0, 2) answer them:

--replset NAME: a member of replica set NAME. Before replSetInitiate it
is neither primary nor secondary. replSetInitiate checks the config as
mongod does (the set's name, members with distinct numeric _id and a
host:port, this server among them, configsvr as --configsvr says, no
unknown fields) and refuses a second one. Then this server is the
PRIMARY while a majority of the members' ports accept a connection, and
a SECONDARY otherwise; replSetGetStatus lists the other members as
SECONDARY while their port accepts a connection, DOWN when not. The
members are only listened for: this server's writes make its oplog, and
a listening member has applied every write at least --repl-delay seconds
old (optime `{ts, t}` at wire 4, a bare timestamp below, optimeDate from
its seconds).

--configsvr: a config server (replSetInitiate wants configsvr: true).
--shardsvr: a shard's member (addShard wants it).
--config FILE: a mongod.conf, of which `replSetName:` and `clusterRole:`
(configsvr, shardsvr) are read, as --replset, --configsvr and --shardsvr.
getCmdLineOpts answers `parsed` with what these set.

--mongos: a router: isMaster says `msg: "isdbgrid"`; addShard (a seed
`SET/host:port,...` of which one port accepts a connection),
enableSharding, shardCollection (`{f: 1}` or one `{f: "hashed"}`) and
listShards work; the replica set commands are unknown, as on mongos.
With --configdb SET/host:port,... (as mongos since 3.2) it listens only
once a config server of that seed is the primary of replica set SET
started as a config server (at most 60 s, else it exits 1), keeps the
shards in that server's config.shards (so every router lists every
shard), checks that a shard's seed names the primary of its replica set
started with --shardsvr, and forwards every command it does not answer
itself to the primary of the first shard on one connection per client:
its collections live on the database's primary shard, unsplit.

--truncate SHARE: every find on a collection (the find command, or
OP_QUERY) answers only this share of the documents that match, rounded
down, and ends its cursor as if that were all, without an error: what
write-up 000 saw TokuMX do once its cache outgrew RAM.

--cache-bytes BYTES: the WiredTiger cache size serverStatus reports (512 MiB
unless given); it holds no cache, so a test under a smaller memory cap
says a size that fits the cap, as a real server's configured cache would.

--version VERSION: what buildInfo reports (2.4.10 at wire 0, 3.2.6 else).

--storage-engine mmapv1|wiredTiger: answer serverStatus as a MongoDB of
--version with that engine. MMAPv1 reports no engine cache (the page cache
is its cache): no `wiredTiger` section, but its journal's `dur` stats
(commits, journaledMB, writeToDataFilesMB, timeMs...), `backgroundFlushing`
and `mem.mapped`; `storageEngine: {name}` only from 3.0, as 2.x servers had
none. Without it, serverStatus is TokuMX's at wire 0 and WiredTiger's else.

Listens on 127.0.0.1 only. Data is kept in memory.
"""

import argparse
import datetime
import itertools
import socket
import socketserver
import struct
import sys
import threading
import time

import bson
import bson.json_util
from bson.int64 import Int64
from bson.timestamp import Timestamp

OP_REPLY, OP_UPDATE, OP_INSERT, OP_QUERY = 1, 2001, 2002, 2004
OP_GET_MORE, OP_DELETE, OP_KILL_CURSORS = 2005, 2006, 2007
DEFAULT_BATCH = 101

LOCK = threading.Lock()
DATA = {}  # ns -> {repr(_id): doc}
INDEXES = {}  # ns -> [index doc]
CURSORS = {}  # id -> (ns, remaining docs)
STATS = {}
GLE_ARGS = []  # distinct getLastError arguments, in arrival order
WRITE_CONCERNS = []  # distinct writeConcern of write commands
READ_FLAGS = {}  # "secondaryOk" / "primary" -> reads
NEXT_CURSOR = itertools.count(1000)
WIRE = 0
ECHO = False  # --echo: each command on stderr
COMMAND_LOG = []  # every command but legacyStats: {db, command, n}

# Topology (see the module's doc); set from the command line.
SELF_HOST = ""  # 127.0.0.1:PORT
REPLSET = None
CONFIGSVR = False
MONGOS = False
SHARDSVR = False
CONFIGDB = None  # (set, [host]) of --configdb
CONFIG_PRIMARY = None  # the config server that answered as primary
REPL_DELAY = 0.0
TRUNCATE = None  # --truncate: the share of a find's documents answered
CACHE_BYTES = 1 << 29  # --cache-bytes: the WiredTiger cache serverStatus reports
VERSION = None  # --version: what buildInfo reports
STORAGE_ENGINE = None  # --storage-engine: serverStatus as that engine's
RS_CONFIG = None  # the config of replSetInitiate
OPLOG = []  # (wall time, Timestamp) of replSetInitiate, then of each write
SHARDS = []  # listShards' entries, in the order added
SHARDED_DBS = set()
SHARDED_COLLECTIONS = {}  # ns -> key
STATE_NAMES = {1: "PRIMARY", 2: "SECONDARY", 8: "DOWN"}


def count(key):
    STATS[key] = STATS.get(key, 0) + 1


def seen(lst, d):
    if d not in lst:
        lst.append(d)


def read_flag(flags):
    key = "secondaryOk" if flags & 4 else "primary"
    READ_FLAGS[key] = READ_FLAGS.get(key, 0) + 1


def cstring(buf, at):
    end = buf.index(b"\0", at)
    return buf[at:end].decode(), end + 1


def doc_at(buf, at):
    (n,) = struct.unpack_from("<i", buf, at)
    return bson.decode(buf[at:at + n]), at + n


def error(code, msg):
    return {"ok": 0.0, "errmsg": msg, "code": code}


def note_write():
    """Appends a write to the oplog of an initiated replica set."""
    if RS_CONFIG is None:
        return
    now = time.time()
    secs = int(now)
    last = OPLOG[-1][1] if OPLOG else None
    inc = last.inc + 1 if last is not None and last.time == secs else 1
    OPLOG.append((now, Timestamp(secs, inc)))


def reachable(host):
    """Whether host:port accepts a connection (this server always). A
    member that went away refuses at once; a live one on a loaded machine
    may be slow to accept, so the wait is long."""
    if host == SELF_HOST:
        return True
    name, _, port = host.rpartition(":")
    try:
        socket.create_connection((name, int(port)), timeout=5).close()
        return True
    except (OSError, ValueError):
        return False


def is_primary():
    members = RS_CONFIG["members"]
    up = sum(1 for m in members if reachable(m["host"]))
    return up * 2 > len(members)


def applied_optime(now):
    """What a listening secondary has applied: the last write at least
    REPL_DELAY seconds old (the initiation at least)."""
    done = [ts for wall, ts in OPLOG if wall <= now - REPL_DELAY]
    return done[-1] if done else OPLOG[0][1]


def host_port(h):
    name, sep, port = h.rpartition(":")
    return bool(sep and name and port.isdigit())


def call(host, db, cmd, timeout=5):
    """One command to the server at host over OP_QUERY; its reply."""
    name, _, port = host.rpartition(":")
    with socket.create_connection((name, int(port)), timeout=timeout) as s:
        body = (struct.pack("<i", 0) + (db + ".$cmd").encode() + b"\0"
                + struct.pack("<ii", 0, -1) + bson.encode(cmd))
        s.sendall(struct.pack("<iiii", 16 + len(body), 1, 0, OP_QUERY) + body)
        (length,) = struct.unpack("<i", recv_exactly(s, 4))
        rest = recv_exactly(s, length - 4)
        return bson.decode(rest[12 + 20:])


def set_primary(setname, hosts, want=None):
    """The host of `hosts` that is the primary of replica set `setname`
    (and, with `want`, whose isMaster has that key), or None."""
    for h in hosts:
        try:
            r = call(h, "admin", {"isMaster": 1})
        except (OSError, ValueError, struct.error, ConnectionError):
            continue
        if r.get("setName") == setname and r.get("ismaster") and (want is None or want in r):
            return h
    return None


def find_config_primary():
    """Waits until a config server of --configdb is its set's primary."""
    global CONFIG_PRIMARY
    setname, hosts = CONFIGDB
    deadline = time.time() + 60
    while time.time() < deadline:
        CONFIG_PRIMARY = set_primary(setname, hosts, want="configsvr")
        if CONFIG_PRIMARY:
            return
        time.sleep(0.2)
    sys.exit("mongos: no primary of config server set %s among %s within 60s" % (setname, ",".join(hosts)))


def known_shards():
    """listShards' entries: the config servers' when there are, else this router's."""
    if CONFIG_PRIMARY is None:
        return SHARDS
    r = call(CONFIG_PRIMARY, "config", {"find": "shards"})
    return list(r["cursor"]["firstBatch"])


RS_FIELDS = {"_id", "version", "members", "configsvr", "protocolVersion", "settings"}
MEMBER_FIELDS = {"_id", "host", "priority", "votes", "arbiterOnly", "hidden",
                 "slaveDelay", "secondaryDelaySecs", "tags", "buildIndexes"}


def check_config(cfg):
    """mongod's refusal of a replica set config (code 93), or None."""
    if not isinstance(cfg, dict):
        return "replSetInitiate wants a config document (this test server builds none)"
    for k in cfg:
        if k not in RS_FIELDS:
            return "Unexpected field %s in replica set config" % k
    if cfg.get("_id") != REPLSET:
        return ("Attempting to initiate a replica set with name %s, but command line "
                "reports %s; rejecting" % (cfg.get("_id"), REPLSET))
    members = cfg.get("members")
    if not isinstance(members, list) or not members:
        return "Replica set configuration must contain at least one member"
    ids = set()
    for m in members:
        if not isinstance(m, dict):
            return "Expected type of members element to be a document"
        for k in m:
            if k not in MEMBER_FIELDS:
                return "Unexpected field %s in replica set member configuration" % k
        mid = m.get("_id")
        if isinstance(mid, bool) or not isinstance(mid, (int, float)) or mid in ids:
            return "Replica set members need distinct numeric _id; found %r" % (mid,)
        ids.add(mid)
        if not isinstance(m.get("host"), str) or not host_port(m["host"]):
            return "Replica set member %r needs a host:port; found %r" % (mid, m.get("host"))
        if "priority" in m and not isinstance(m["priority"], (int, float)):
            return "priority field value of %r is not a number" % (m["priority"],)
    if bool(cfg.get("configsvr")) != CONFIGSVR:
        if CONFIGSVR:
            return "Nodes started with the --configsvr flag must have configsvr:true in their config"
        return "Nodes being used for config servers must be started with the --configsvr flag"
    if SELF_HOST not in [m["host"] for m in members]:
        return ("No host described in new configuration for replica set %s maps to "
                "this node (%s)" % (REPLSET, SELF_HOST))
    return None


def version_tuple(v):
    return tuple(int(x) for x in v.split(".")[:2])


def era_server_status():
    """serverStatus of a MongoDB of --version running --storage-engine."""
    version = VERSION or "2.4.10"
    r = {"version": version, "uptime": 1.0, "ok": 1.0,
         "mem": {"bits": 64, "resident": 40, "virtual": 400, "supported": True}}
    if version_tuple(version) >= (3, 0):
        r["storageEngine"] = {"name": STORAGE_ENGINE}
    if STORAGE_ENGINE == "wiredTiger":
        r["wiredTiger"] = {"cache": {"maximum bytes configured": CACHE_BYTES}}
        return r
    size = sum(len(bson.encode(d)) for c in DATA.values() for d in c.values())
    r["mem"]["mapped"] = max(1, size >> 20)
    r["dur"] = {"commits": 30, "journaledMB": size / float(1 << 20), "writeToDataFilesMB": size / float(1 << 20),
                "compression": 0.0, "commitsInWriteLock": 0, "earlyCommits": 0,
                "timeMs": {"dt": 3000, "prepLogBuffer": 0, "writeToJournal": 1, "writeToDataFiles": 1,
                           "remapPrivateView": 0}}
    r["backgroundFlushing"] = {"flushes": 1, "total_ms": 1, "average_ms": 1.0, "last_ms": 1}
    return r


def status_member(m, primary, now):
    host = m["host"]
    if host == SELF_HOST:
        state, ts, health = (1 if primary else 2), OPLOG[-1][1], 1.0
    elif reachable(host):
        state, ts, health = 2, applied_optime(now), 1.0
    else:
        state, ts, health = 8, Timestamp(0, 0), 0.0
    term = 1 if health else -1
    optime = {"ts": ts, "t": Int64(term)} if WIRE >= 4 else ts
    r = {"_id": m["_id"], "name": host, "health": health, "state": state,
         "stateStr": STATE_NAMES[state], "optime": optime,
         "optimeDate": datetime.datetime.fromtimestamp(ts.time, datetime.timezone.utc)}
    if host == SELF_HOST:
        r["self"] = True
    return r


def replset_command(lname, cmd):
    """replSetInitiate / replSetGetStatus of a mongod, or None."""
    global RS_CONFIG
    if lname == "replsetinitiate":
        if REPLSET is None:
            return error(76, "This node was not started with the replSet option")
        if RS_CONFIG is not None:
            return error(23, "already initialized")
        why = check_config(cmd["replSetInitiate"])
        if why:
            return error(93, why)
        RS_CONFIG = cmd["replSetInitiate"]
        note_write()
        return {"info": "Config now saved locally.  Should come online in about a minute.",
                "ok": 1.0}
    if lname == "replsetgetstatus":
        if REPLSET is None:
            return error(76, "not running with --replSet")
        if RS_CONFIG is None:
            return error(94, "no replset config has been received")
        now = time.time()
        primary = is_primary()
        members = [status_member(m, primary, now) for m in RS_CONFIG["members"]]
        return {"set": REPLSET, "date": datetime.datetime.now(datetime.timezone.utc),
                "myState": 1 if primary else 2, "members": members, "ok": 1.0}
    return None


def sharding_command(lname, cmd):
    """The router's addShard / enableSharding / shardCollection / listShards, or None."""
    name = next(iter(cmd))
    if lname == "addshard":
        seed = cmd[name]
        setname, _, hosts = seed.rpartition("/") if isinstance(seed, str) else ("", "", "")
        hosts = hosts.split(",")
        if not all(host_port(h) for h in hosts):
            return error(9, "invalid connection string %r" % (seed,))
        if not any(reachable(h) for h in hosts):
            return error(6, "couldn't connect to new shard %s" % seed)
        if CONFIG_PRIMARY is not None:
            primary = set_primary(setname, hosts)
            if primary is None:
                return error(133, "could not find host matching read preference { mode: \"primary\" } for set %s" % setname)
            opts = call(primary, "admin", {"getCmdLineOpts": 1}).get("parsed", {})
            if opts.get("sharding", {}).get("clusterRole") != "shardsvr":
                return error(96, "Cannot add %s as a shard since it is not started with --shardsvr" % seed)
        sid = cmd.get("name") or setname or "shard%04d" % len(SHARDS)
        for s in known_shards():
            if s["_id"] == sid:
                if s["host"] == seed:
                    return {"shardAdded": sid, "ok": 1.0}
                return error(96, "A shard named %s already exists" % sid)
        shard = {"_id": sid, "host": seed, "state": 1}
        if CONFIG_PRIMARY is None:
            SHARDS.append(shard)
        else:
            call(CONFIG_PRIMARY, "config", {"insert": "shards", "documents": [shard]})
        return {"shardAdded": sid, "ok": 1.0}
    if lname == "enablesharding":
        db = cmd[name]
        if not isinstance(db, str) or not db or "." in db:
            return error(73, "invalid db name specified: %r" % (db,))
        if not known_shards():
            return error(70, "no shards found to enable sharding of %s on" % db)
        if db in SHARDED_DBS:
            return error(23, "sharding already enabled for database %s" % db)
        SHARDED_DBS.add(db)
        return {"ok": 1.0}
    if lname == "shardcollection":
        ns = cmd[name]
        db, _, coll = ns.partition(".") if isinstance(ns, str) else ("", "", "")
        if not db or not coll:
            return error(73, "invalid collection namespace [%s]" % (ns,))
        if db not in SHARDED_DBS:
            return error(20, "sharding not enabled for db %s" % db)
        key = cmd.get("key")
        values = list(key.values()) if isinstance(key, dict) else []
        ranged = values and all(v == 1 and not isinstance(v, bool) for v in values)
        if not (ranged or values == ["hashed"]):
            return error(2, "unsupported shard key pattern %r. Pattern must either be a single "
                            "hashed field, or a list of ascending fields." % (key,))
        if ns in SHARDED_COLLECTIONS:
            return error(20, "sharding already enabled for collection %s" % ns)
        SHARDED_COLLECTIONS[ns] = key
        return {"collectionsharded": ns, "ok": 1.0}
    if lname == "listshards":
        return {"shards": known_shards(), "ok": 1.0}
    return None


# What a router answers itself; it forwards the rest (with --configdb).
ROUTER_COMMANDS = {"ismaster", "hello", "buildinfo", "legacystats", "addshard", "enablesharding",
                   "shardcollection", "listshards", "serverstatus", "getcmdlineopts"}


def primary_shard():
    """The primary of the first shard, where a router's collections live."""
    shards = known_shards()
    if not shards:
        return None
    setname, _, hosts = shards[0]["host"].rpartition("/")
    return set_primary(setname, hosts.split(","))


def compare(v, op, arg):
    try:
        return {"$gte": v >= arg, "$gt": v > arg, "$lte": v <= arg, "$lt": v < arg}[op]
    except TypeError:
        return False


def matches(doc, flt):
    for k, want in flt.items():
        if k not in doc:
            return False
        v = doc[k]
        if isinstance(want, dict) and want and all(o.startswith("$") for o in want):
            if not all(compare(v, o, a) for o, a in want.items()):
                return False
        elif v != want:
            return False
    return True


def select(ns, flt, sort, limit):
    docs = [d for d in DATA.get(ns, {}).values() if matches(d, flt)]
    for k, direction in reversed(list((sort or {}).items())):
        docs.sort(key=lambda d: d.get(k), reverse=direction < 0)
    return docs[:limit] if limit else docs


def insert(ns, docs, ordered=True):
    coll = DATA.setdefault(ns, {})
    errors = []
    for i, d in enumerate(docs):
        if ns.endswith(".system.indexes"):
            INDEXES.setdefault(d["ns"], []).append(d)
            continue
        d.setdefault("_id", bson.ObjectId())
        key = repr(d["_id"])
        if key in coll:
            errors.append({"index": i, "code": 11000,
                           "errmsg": "E11000 duplicate key error index: %s.$_id_ dup key" % ns})
            if ordered:
                break
            continue
        coll[key] = d
        note_write()
    return len(docs) - len(errors), errors


def update(ns, sel, upd, multi=False, upsert=False):
    n = 0
    for d in select(ns, sel, None, 0):
        for k, v in upd.get("$set", {}).items():
            d[k] = v
        note_write()
        n += 1
        if not multi:
            break
    return n


def delete(ns, sel, single):
    coll = DATA.get(ns, {})
    gone = 0
    for d in select(ns, sel, None, 0):
        del coll[repr(d["_id"])]
        note_write()
        gone += 1
        if single:
            break
    return gone


def truncated(docs):
    """A find's answer under --truncate: its first share, silently."""
    if TRUNCATE is None:
        return docs
    return docs[: int(len(docs) * TRUNCATE)]


def open_cursor(ns, docs, first):
    batch, rest = docs[:first], docs[first:]
    if not rest:
        return batch, 0
    cid = next(NEXT_CURSOR)
    CURSORS[cid] = (ns, rest)
    return batch, cid


def more(cid, n):
    ns, rest = CURSORS.pop(cid)
    n = n or DEFAULT_BATCH
    batch, rest = rest[:n], rest[n:]
    if rest:
        CURSORS[cid] = (ns, rest)
        return batch, cid
    return batch, 0


def is_master():
    r = {"ismaster": True, "maxBsonObjectSize": 16 * 1024 * 1024, "ok": 1.0}
    if WIRE > 0:
        r.update(maxWireVersion=WIRE, minWireVersion=0)
    if MONGOS:
        r["msg"] = "isdbgrid"
    if REPLSET is not None and RS_CONFIG is None:
        r.update(ismaster=False, secondary=False, isreplicaset=True,
                 info="Does not have a valid replica set config")
    elif REPLSET is not None:
        primary = is_primary()
        r.update(ismaster=primary, secondary=not primary, setName=REPLSET, setVersion=1,
                 hosts=[m["host"] for m in RS_CONFIG["members"]], me=SELF_HOST)
        if primary:
            r["primary"] = SELF_HOST
    if CONFIGSVR:
        r["configsvr"] = 2
    return r


class Conn:
    def __init__(self):
        self.last_error = {"err": None, "n": 0, "ok": 1.0}
        self.commands = 0

    def command(self, db, cmd):
        name = next(iter(cmd))
        count("cmd:" + name)
        lname = name.lower()
        self.commands += 1
        if lname != "legacystats":
            COMMAND_LOG.append({"db": db, "command": cmd, "n": self.commands})
            if ECHO and lname not in ("ismaster", "hello", "insert", "find", "getmore"):
                # One line per command on stderr (the engine log of a run).
                print("command %s %s" % (db, bson.json_util.dumps(cmd)), file=sys.stderr, flush=True)
        if lname in ("ismaster", "hello"):
            return is_master()
        if lname == "buildinfo":
            return {"version": VERSION or ("2.4.10" if WIRE == 0 else "3.2.6"), "ok": 1.0}
        if lname == "getcmdlineopts":
            parsed = {"net": {"port": int(SELF_HOST.rpartition(":")[2])}}
            if REPLSET:
                parsed["replication"] = {"replSetName": REPLSET}
            if CONFIGSVR or SHARDSVR:
                parsed["sharding"] = {"clusterRole": "configsvr" if CONFIGSVR else "shardsvr"}
            if CONFIGDB:
                parsed["sharding"] = {"configDB": "%s/%s" % (CONFIGDB[0], ",".join(CONFIGDB[1]))}
            return {"argv": sys.argv, "parsed": parsed, "ok": 1.0}
        if lname == "legacystats":
            r = {"stats": dict(STATS), "indexes": {k: len(v) for k, v in INDEXES.items()},
                 "gleArgs": GLE_ARGS, "writeConcerns": WRITE_CONCERNS,
                 "readFlags": READ_FLAGS, "ok": 1.0}
            if cmd.get("commandLog"):
                r["commandLog"] = COMMAND_LOG
            return r
        r = sharding_command(lname, cmd) if MONGOS else replset_command(lname, cmd)
        if r is not None:
            return r
        if lname == "getlasterror":
            seen(GLE_ARGS, {k: v for k, v in cmd.items() if k != name})
            r = dict(self.last_error)
            r["wtimeout"] = False
            r["w"] = cmd.get("w", 1)
            return r
        if lname == "drop":
            ns = "%s.%s" % (db, cmd[name])
            if DATA.pop(ns, None) is None:
                return {"ok": 0.0, "errmsg": "ns not found"}
            INDEXES.pop(ns, None)
            return {"ok": 1.0}
        if lname == "serverstatus":
            if STORAGE_ENGINE is not None:
                return era_server_status()
            if WIRE == 0:
                return {"ft": {"cachetable": {"size": {"current": 10, "limit": 1 << 30}}}, "ok": 1.0}
            return {"wiredTiger": {"cache": {"maximum bytes configured": CACHE_BYTES}}, "ok": 1.0}
        if lname == "listdatabases":
            names = sorted({ns.split(".")[0] for ns in DATA})
            return {"databases": [{"name": n, "sizeOnDisk": 1.0} for n in names], "ok": 1.0}
        if lname == "dbstats":
            size = sum(len(bson.encode(d)) for ns, c in DATA.items() if ns.startswith(db + ".") for d in c.values())
            key = "indexStorageSize" if WIRE == 0 else "indexSize"
            return {"db": db, "storageSize": size, key: 4096, "ok": 1.0}
        if lname == "collstats":
            ns = "%s.%s" % (db, cmd[name])
            size = sum(len(bson.encode(d)) for d in DATA.get(ns, {}).values())
            return {"ns": ns, "storageSize": size, "totalIndexSize": 0, "ok": 1.0}
        if WIRE >= 2:
            r = self.write_command(db, lname, cmd)
            if r is not None:
                return r
        if WIRE >= 4:
            r = self.read_command(db, lname, cmd)
            if r is not None:
                return r
        return {"ok": 0.0, "errmsg": "no such cmd: %s" % name, "code": 59}

    def write_command(self, db, lname, cmd):
        ns = "%s.%s" % (db, cmd[next(iter(cmd))])
        if lname in ("insert", "update", "delete"):
            seen(WRITE_CONCERNS, dict(cmd.get("writeConcern", {})))
        if lname == "insert":
            n, errors = insert(ns, cmd["documents"], cmd.get("ordered", True))
            r = {"n": n, "ok": 1.0}
            if errors:
                r["writeErrors"] = errors
            return r
        if lname == "update":
            n = sum(update(ns, u["q"], u["u"], u.get("multi", False)) for u in cmd["updates"])
            return {"n": n, "nModified": n, "ok": 1.0}
        if lname == "delete":
            n = sum(delete(ns, d["q"], d.get("limit", 0) == 1) for d in cmd["deletes"])
            return {"n": n, "ok": 1.0}
        if lname == "createindexes":
            INDEXES.setdefault(ns, []).extend(cmd["indexes"])
            return {"ok": 1.0, "numIndexesAfter": len(INDEXES[ns]) + 1}
        return None

    def read_command(self, db, lname, cmd):
        if lname == "count":
            ns = "%s.%s" % (db, cmd["count"])
            return {"n": len(select(ns, cmd.get("query") or {}, None, 0)), "ok": 1.0}
        if lname == "find":
            ns = "%s.%s" % (db, cmd["find"])
            docs = truncated(select(ns, cmd.get("filter", {}), cmd.get("sort"), cmd.get("limit", 0)))
            first = 1 if cmd.get("singleBatch") else cmd.get("batchSize", DEFAULT_BATCH)
            batch, cid = open_cursor(ns, docs, first)
            if cmd.get("singleBatch"):
                CURSORS.pop(cid, None)
                cid = 0
            return {"cursor": {"firstBatch": batch, "id": bson.int64.Int64(cid), "ns": ns}, "ok": 1.0}
        if lname == "getmore":
            cid = cmd["getMore"]
            if cid not in CURSORS:
                return {"ok": 0.0, "errmsg": "cursor id %d not found" % cid, "code": 43}
            ns = CURSORS[cid][0]
            batch, cid = more(cid, cmd.get("batchSize", 0))
            return {"cursor": {"nextBatch": batch, "id": bson.int64.Int64(cid), "ns": ns}, "ok": 1.0}
        if lname == "killcursors":
            for c in cmd.get("cursors", []):
                CURSORS.pop(c, None)
            return {"ok": 1.0}
        return None

    def query(self, ns, ret, q, flags=0):
        db, coll = ns.split(".", 1)
        if coll == "$cmd":
            if next(iter(q)).lower() in ("find", "getmore"):
                read_flag(flags)
            return [self.command(db, q)], 0, 0
        read_flag(flags)
        if "$query" in q:
            flt, sort = q["$query"], q.get("$orderby")
        else:
            flt, sort = q, None
        limit = abs(ret) if ret < 0 else 0
        docs = truncated(select(ns, flt, sort, limit))
        if ret < 0:
            return docs, 0, 0
        batch, cid = open_cursor(ns, docs, ret or DEFAULT_BATCH)
        return batch, cid, 0

    def legacy_write(self, op, body):
        at = 4 if op != OP_INSERT else 0
        if op == OP_INSERT:
            (flags,) = struct.unpack_from("<i", body, 0)
            ns, at = cstring(body, 4)
            docs = []
            while at < len(body):
                d, at = doc_at(body, at)
                docs.append(d)
            n, errors = insert(ns, docs, not flags & 1)
            err = errors[-1] if errors else None
            self.last_error = {"err": err and err["errmsg"], "code": err and err["code"], "n": 0, "ok": 1.0}
            return
        ns, at = cstring(body, at)
        (flags,) = struct.unpack_from("<i", body, at)
        sel, at = doc_at(body, at + 4)
        if op == OP_UPDATE:
            upd, _ = doc_at(body, at)
            n = update(ns, sel, upd, bool(flags & 2))
            self.last_error = {"err": None, "n": n, "updatedExisting": n > 0, "ok": 1.0}
        else:
            n = delete(ns, sel, bool(flags & 1))
            self.last_error = {"err": None, "n": n, "ok": 1.0}

    def handle(self, op, body):
        """The reply's (docs, cursor id, flags), or None for no reply."""
        if op == OP_QUERY:
            (flags,) = struct.unpack_from("<i", body, 0)
            ns, at = cstring(body, 4)
            _skip, ret = struct.unpack_from("<ii", body, at)
            q, _ = doc_at(body, at + 8)
            return self.query(ns, ret, q, flags)
        if op == OP_GET_MORE:
            _ns, at = cstring(body, 4)
            n, cid = struct.unpack_from("<iq", body, at)
            if cid not in CURSORS:
                return [], 0, 1  # CursorNotFound
            batch, cid = more(cid, n)
            return batch, cid, 0
        if op == OP_KILL_CURSORS:
            (n,) = struct.unpack_from("<i", body, 4)
            for cid in struct.unpack_from("<%dq" % n, body, 8):
                CURSORS.pop(cid, None)
            return None
        if op in (OP_INSERT, OP_UPDATE, OP_DELETE):
            self.legacy_write(op, body)
            return None
        raise ConnectionError("unsupported opcode %d" % op)


def recv_exactly(sock, n):
    buf = b""
    while len(buf) < n:
        chunk = sock.recv(n - len(buf))
        if not chunk:
            raise ConnectionError("closed")
        buf += chunk
    return buf


def router_forwards(op, body):
    """Whether a router with --configdb sends this message on to its
    primary shard: everything but the commands it answers itself."""
    if not MONGOS or CONFIGDB is None:
        return False
    if op != OP_QUERY:
        return True
    ns, at = cstring(body, 4)
    if not ns.endswith(".$cmd"):
        return True
    q, _ = doc_at(body, at + 8)
    return next(iter(q)).lower() not in ROUTER_COMMANDS


class Handler(socketserver.BaseRequestHandler):
    def forward(self, head, body):
        """Sends the message to the primary shard on this client's own
        connection there; relays its reply, if it has one."""
        if self.backend is None:
            host = primary_shard()
            if host is None:
                raise ConnectionError("no shard to forward to")
            name, _, port = host.rpartition(":")
            self.backend = socket.create_connection((name, int(port)))
            if ECHO:
                print("forwarding to %s" % host, file=sys.stderr, flush=True)
        self.backend.sendall(head + body)
        op = struct.unpack_from("<i", head, 12)[0]
        if op in (OP_INSERT, OP_UPDATE, OP_DELETE, OP_KILL_CURSORS):
            return
        (length,) = struct.unpack("<i", recv_exactly(self.backend, 4))
        rest = recv_exactly(self.backend, length - 4)
        self.request.sendall(struct.pack("<i", length) + rest)

    def handle(self):
        conn = Conn()
        self.backend = None
        reply_id = itertools.count(1)
        try:
            while True:
                head = recv_exactly(self.request, 16)
                length, req_id, _to, op = struct.unpack("<iiii", head)
                body = recv_exactly(self.request, length - 16)
                if router_forwards(op, body):
                    with LOCK:
                        count("forwarded")
                    self.forward(head, body)
                    continue
                with LOCK:
                    count("op:%d" % op)
                    r = conn.handle(op, body)
                if r is None:
                    continue
                docs, cid, flags = r
                payload = b"".join(bson.encode(d) for d in docs)
                head = struct.pack("<iqii", flags, cid, 0, len(docs))
                msg = struct.pack("<iiii", 16 + len(head) + len(payload), next(reply_id), req_id, OP_REPLY)
                self.request.sendall(msg + head + payload)
        except (ConnectionError, struct.error, OSError):
            return
        finally:
            if self.backend is not None:
                self.backend.close()


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True
    # socketserver's backlog of 5 overflows when the members of a replica
    # set are asked whether they listen faster than a loaded machine lets
    # this process accept; a dropped connection then looks like a member
    # that is down.
    request_queue_size = 128


def main():
    global WIRE, SELF_HOST, REPLSET, CONFIGSVR, SHARDSVR, MONGOS, REPL_DELAY, ECHO, CONFIGDB, TRUNCATE, CACHE_BYTES, VERSION, STORAGE_ENGINE
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wire", type=int, choices=[0, 2, 4], required=True)
    p.add_argument("--replset", metavar="NAME")
    p.add_argument("--configsvr", action="store_true")
    p.add_argument("--shardsvr", action="store_true")
    p.add_argument("--config", metavar="FILE", help="a mongod.conf: replSetName and clusterRole")
    p.add_argument("--mongos", action="store_true")
    p.add_argument("--configdb", metavar="SET/HOST:PORT,...")
    p.add_argument("--repl-delay", type=float, default=0.0, metavar="SECONDS")
    p.add_argument("--echo", action="store_true", help="print each command but hello and the data ones on stderr")
    p.add_argument("--truncate", type=float, metavar="SHARE", help="answer only this share of a find's documents")
    p.add_argument("--version", dest="server_version", metavar="VERSION", help="what buildInfo reports")
    p.add_argument("--storage-engine", choices=["mmapv1", "wiredTiger"], help="serverStatus as that engine's")
    p.add_argument("--cache-bytes", type=int, default=1 << 29, metavar="BYTES", help="the WiredTiger cache serverStatus reports (wire 2 and 4)")
    a = p.parse_args()
    if a.config:
        with open(a.config) as f:
            for line in f:
                key, _, value = line.strip().partition(":")
                value = value.strip()
                if key == "replSetName":
                    a.replset = value
                elif key == "clusterRole":
                    a.configsvr, a.shardsvr = value == "configsvr", value == "shardsvr"
    if a.mongos and (a.replset or a.configsvr or a.shardsvr):
        p.error("--mongos is a router: no --replset, --configsvr or --shardsvr")
    if a.configdb and not a.mongos:
        p.error("--configdb is a router's: give --mongos")
    WIRE = a.wire
    ECHO = a.echo
    TRUNCATE = a.truncate
    CACHE_BYTES = a.cache_bytes
    VERSION, STORAGE_ENGINE = a.server_version, a.storage_engine
    SELF_HOST = "127.0.0.1:%d" % a.port
    REPLSET, CONFIGSVR, MONGOS, REPL_DELAY = a.replset, a.configsvr, a.mongos, a.repl_delay
    SHARDSVR = a.shardsvr
    if ECHO:
        role = "configsvr" if CONFIGSVR else "shardsvr" if SHARDSVR else "router" if MONGOS else "-"
        print("started replSetName=%s clusterRole=%s configdb=%s" % (REPLSET or "-", role, a.configdb or "-"),
              file=sys.stderr, flush=True)
    if a.configdb:
        setname, _, hosts = a.configdb.rpartition("/")
        CONFIGDB = (setname, hosts.split(","))
        find_config_primary()
    with Server(("127.0.0.1", a.port), Handler) as s:
        s.serve_forever()


if __name__ == "__main__":
    main()
