-- Each host's audit records, copied in batches, idempotent on (host, seq),
-- and the head of its chain as it last reported it (its anchor).

ALTER TABLE fleet.hosts ADD COLUMN audit_head text;
GRANT UPDATE (audit_head) ON fleet.hosts TO praxis_fleet_host;

CREATE TABLE fleet.audit (
    host      text NOT NULL REFERENCES fleet.hosts (name),
    seq       bigint NOT NULL CHECK (seq > 0),
    ts        text NOT NULL,
    kind      text NOT NULL,
    record    jsonb NOT NULL,
    prev_hash text NOT NULL,
    hash      text NOT NULL,
    copied_at timestamptz NOT NULL DEFAULT now(),
    PRIMARY KEY (host, seq)
);

ALTER TABLE fleet.audit ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fleet.audit TO praxis_fleet_host
    USING (host = fleet.my_host()) WITH CHECK (host = fleet.my_host());
CREATE POLICY every ON fleet.audit FOR SELECT TO praxis_fleet_operator USING (true);
-- Append only: a host adds its records and reads its position back.
GRANT SELECT, INSERT ON fleet.audit TO praxis_fleet_host;
GRANT SELECT ON fleet.audit TO praxis_fleet_operator;
