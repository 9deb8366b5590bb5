-- Shared judgment memory: the memories of `workspace` or `org`
-- visibility that hosts propose, and the review queue over them. A host
-- proposes (an open row, in its own name) and reads; only an operator
-- reviews, so no host can make a lesson that relaxes another host's HOLDs.

CREATE SEQUENCE fleet.memory_changes;

CREATE TABLE fleet.memories (
    id         text PRIMARY KEY,
    visibility text NOT NULL CHECK (visibility IN ('workspace', 'org')),
    workspace  text NOT NULL,
    review     text NOT NULL,
    -- The memory as the memory crate stores it; its review is the column's.
    body       jsonb NOT NULL CHECK (body->>'review' = review AND body->'item'->>'memory_id' = id),
    host       text NOT NULL REFERENCES fleet.hosts (name),
    -- Grows with every change, so a host fetches only what changed.
    changed    bigint NOT NULL DEFAULT 0,
    changed_by name NOT NULL DEFAULT session_user,
    changed_at timestamptz NOT NULL DEFAULT now()
);

CREATE FUNCTION fleet.stamp_memory() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.changed := nextval('fleet.memory_changes');
    NEW.changed_by := session_user;
    NEW.changed_at := now();
    RETURN NEW;
END $$;
CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON fleet.memories
    FOR EACH ROW EXECUTE FUNCTION fleet.stamp_memory();

CREATE TRIGGER notify AFTER INSERT OR UPDATE ON fleet.memories
    FOR EACH ROW EXECUTE FUNCTION fleet.notify_every_host('memory');

ALTER TABLE fleet.memories ENABLE ROW LEVEL SECURITY;
CREATE POLICY read ON fleet.memories FOR SELECT TO praxis_fleet_host USING (true);
CREATE POLICY propose ON fleet.memories FOR INSERT TO praxis_fleet_host
    WITH CHECK (host = fleet.my_host() AND review IN ('pending', 'escalated'));
CREATE POLICY every ON fleet.memories TO praxis_fleet_operator USING (true) WITH CHECK (true);
GRANT USAGE ON SEQUENCE fleet.memory_changes TO praxis_fleet_host, praxis_fleet_operator;
GRANT SELECT, INSERT (id, visibility, workspace, review, body, host)
    ON fleet.memories TO praxis_fleet_host;
GRANT SELECT, UPDATE (review, body) ON fleet.memories TO praxis_fleet_operator;
