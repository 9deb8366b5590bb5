"""Tampers with a stopped praxisd's audit store the way an attacker with file
access would: without the chain key (hashes recomputed as plain SHA-256), or
with a stolen one.

usage: tamper.py DB recompute [KEY]
                                rewrite event 2's reason, recompute every later hash
                                (HMAC under KEY, a stolen audit.key, if given)
       tamper.py DB truncate N  delete the last N events and reset sqlite_sequence
       tamper.py DB lock S      hold an exclusive transaction for S seconds
"""
import hashlib
import hmac
import json
import sqlite3
import sys

import time

db, action = sys.argv[1], sys.argv[2]
if action == "lock":
    held = sqlite3.connect(db, isolation_level=None)
    held.execute("BEGIN EXCLUSIVE")
    print("locked", flush=True)
    time.sleep(float(sys.argv[3]))
    held.execute("COMMIT")
    sys.exit(0)
conn = sqlite3.connect(db)
conn.execute("DROP TRIGGER IF EXISTS events_no_update")
conn.execute("DROP TRIGGER IF EXISTS events_no_delete")
conn.row_factory = sqlite3.Row
if action == "recompute":
    conn.execute("UPDATE events SET reason = 'nothing happened here' WHERE seq = 2")
    rows = [dict(r) for r in conn.execute("SELECT * FROM events ORDER BY seq")]
    prev = "0" * 64
    for row in rows:
        row["prev_hash"] = prev
        del row["hash"]
        canonical = json.dumps(row, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
        message = prev.encode() + canonical.encode()
        if len(sys.argv) > 3:
            key = open(sys.argv[3], "rb").read()
            digest = hmac.new(key, message, hashlib.sha256).hexdigest()
        else:
            digest = hashlib.sha256(message).hexdigest()
        conn.execute("UPDATE events SET prev_hash = ?, hash = ? WHERE seq = ?", (prev, digest, row["seq"]))
        prev = digest
elif action == "truncate":
    n = int(sys.argv[3])
    top = conn.execute("SELECT max(seq) FROM events").fetchone()[0]
    conn.execute("DELETE FROM events WHERE seq > ?", (top - n,))
    conn.execute("UPDATE sqlite_sequence SET seq = ? WHERE name = 'events'", (top - n,))
else:
    sys.exit(f"unknown action {action}")
conn.commit()
conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
conn.close()
