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
many reads set the SecondaryOk bit of OP_QUERY (`readFlags`).
Listens on 127.0.0.1 only. Data is kept in memory.
"""

import argparse
import itertools
import socket
import socketserver
import struct
import threading

import bson

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
    return len(docs) - len(errors), errors


def update(ns, sel, upd, multi=False, upsert=False):
    n = 0
    for d in select(ns, sel, None, 0):
        for k, v in upd.get("$set", {}).items():
            d[k] = v
        n += 1
        if not multi:
            break
    return n


def delete(ns, sel, single):
    coll = DATA.get(ns, {})
    gone = 0
    for d in select(ns, sel, None, 0):
        del coll[repr(d["_id"])]
        gone += 1
        if single:
            break
    return gone


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


class Conn:
    def __init__(self):
        self.last_error = {"err": None, "n": 0, "ok": 1.0}

    def command(self, db, cmd):
        name = next(iter(cmd))
        count("cmd:" + name)
        lname = name.lower()
        if lname in ("ismaster", "hello"):
            r = {"ismaster": True, "maxBsonObjectSize": 16 * 1024 * 1024, "ok": 1.0}
            if WIRE > 0:
                r.update(maxWireVersion=WIRE, minWireVersion=0)
            return r
        if lname == "buildinfo":
            return {"version": "2.4.10" if WIRE == 0 else "3.2.6", "ok": 1.0}
        if lname == "legacystats":
            return {"stats": dict(STATS), "indexes": {k: len(v) for k, v in INDEXES.items()},
                    "gleArgs": GLE_ARGS, "writeConcerns": WRITE_CONCERNS,
                    "readFlags": READ_FLAGS, "ok": 1.0}
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
            if WIRE == 0:
                return {"ft": {"cachetable": {"size": {"current": 10, "limit": 1 << 30}}}, "ok": 1.0}
            return {"wiredTiger": {"cache": {"maximum bytes configured": 1 << 29}}, "ok": 1.0}
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
        if lname == "find":
            ns = "%s.%s" % (db, cmd["find"])
            docs = select(ns, cmd.get("filter", {}), cmd.get("sort"), cmd.get("limit", 0))
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
        docs = select(ns, flt, sort, limit)
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


class Handler(socketserver.BaseRequestHandler):
    def handle(self):
        conn = Conn()
        reply_id = itertools.count(1)
        try:
            while True:
                length, req_id, _to, op = struct.unpack("<iiii", recv_exactly(self.request, 16))
                body = recv_exactly(self.request, length - 16)
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
        except (ConnectionError, struct.error):
            return


class Server(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


def main():
    global WIRE
    p = argparse.ArgumentParser()
    p.add_argument("--port", type=int, required=True)
    p.add_argument("--wire", type=int, choices=[0, 2, 4], required=True)
    a = p.parse_args()
    WIRE = a.wire
    with Server(("127.0.0.1", a.port), Handler) as s:
        s.serve_forever()


if __name__ == "__main__":
    main()
