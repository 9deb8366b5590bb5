-- The fleet's control tables: hosts, the kill switch, holds and the
-- operators' decisions on them. Hosts and operators are separate roles;
-- row-level security keeps each host to its own rows.

CREATE TABLE fleet.hosts (
    name            text PRIMARY KEY CHECK (name ~ '^[a-z0-9][a-z0-9_-]{0,62}$'),
    db_role         name NOT NULL UNIQUE,
    version         text,
    policy_revision text,
    killed          boolean NOT NULL DEFAULT false,
    kill_reason     text,
    audit_seq       bigint NOT NULL DEFAULT 0,
    started_at      timestamptz,
    last_seen       timestamptz
);

-- The host the session's login role stands for, or NULL. SECURITY DEFINER
-- so that the row-level policies can read `hosts` whatever the caller sees.
CREATE FUNCTION fleet.my_host() RETURNS text
    LANGUAGE sql STABLE SECURITY DEFINER SET search_path = pg_catalog
    AS $$ SELECT name FROM fleet.hosts WHERE db_role = session_user $$;

-- One row a scope: '*' (every host) or one host's name.
CREATE TABLE fleet.kill (
    scope      text PRIMARY KEY,
    engaged    boolean NOT NULL,
    reason     text NOT NULL,
    operator   name NOT NULL DEFAULT session_user,
    changed_at timestamptz NOT NULL DEFAULT now()
);

-- A HOLD waiting on a host, copied there by the host.
CREATE TABLE fleet.holds (
    host       text NOT NULL REFERENCES fleet.hosts (name),
    request_id text NOT NULL,
    command    text NOT NULL,
    reason     text NOT NULL,
    grants     jsonb NOT NULL DEFAULT '[]',
    digest     text NOT NULL,
    held_at    timestamptz NOT NULL DEFAULT now(),
    open       boolean NOT NULL DEFAULT true,
    PRIMARY KEY (host, request_id)
);

-- An operator's approval or denial of one hold, bound to its digest; the
-- host applies it once and says how.
CREATE TABLE fleet.decisions (
    host       text NOT NULL,
    request_id text NOT NULL,
    approve    boolean NOT NULL,
    digest     text NOT NULL,
    ttl_secs   integer CHECK (ttl_secs BETWEEN 1 AND 604800),
    note       text,
    operator   name NOT NULL DEFAULT session_user,
    decided_at timestamptz NOT NULL DEFAULT now(),
    applied_at timestamptz,
    outcome    text,
    PRIMARY KEY (host, request_id),
    FOREIGN KEY (host, request_id) REFERENCES fleet.holds (host, request_id)
);

-- Who changed a row is the login that did, whatever it wrote.
CREATE FUNCTION fleet.stamp_operator() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    NEW.operator := session_user;
    IF TG_TABLE_NAME = 'kill' THEN
        NEW.changed_at := now();
    END IF;
    RETURN NEW;
END $$;
CREATE TRIGGER stamp BEFORE INSERT OR UPDATE ON fleet.kill
    FOR EACH ROW EXECUTE FUNCTION fleet.stamp_operator();
CREATE TRIGGER stamp BEFORE INSERT ON fleet.decisions
    FOR EACH ROW EXECUTE FUNCTION fleet.stamp_operator();

-- Hosts listen on `praxis_fleet`; the payload says which table changed
-- and for whom ('*' for every host).
CREATE FUNCTION fleet.notify() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    IF TG_TABLE_NAME = 'kill' THEN
        PERFORM pg_notify('praxis_fleet', 'kill ' || NEW.scope);
    ELSE
        PERFORM pg_notify('praxis_fleet', 'decision ' || NEW.host);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER notify AFTER INSERT OR UPDATE ON fleet.kill
    FOR EACH ROW EXECUTE FUNCTION fleet.notify();
CREATE TRIGGER notify AFTER INSERT ON fleet.decisions
    FOR EACH ROW EXECUTE FUNCTION fleet.notify();

GRANT USAGE ON SCHEMA fleet TO praxis_fleet_host, praxis_fleet_operator;
GRANT EXECUTE ON FUNCTION fleet.my_host() TO praxis_fleet_host, praxis_fleet_operator;

ALTER TABLE fleet.hosts ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fleet.hosts TO praxis_fleet_host USING (db_role = session_user);
CREATE POLICY every ON fleet.hosts FOR SELECT TO praxis_fleet_operator USING (true);
GRANT SELECT, UPDATE (version, policy_revision, killed, kill_reason, audit_seq, started_at, last_seen)
    ON fleet.hosts TO praxis_fleet_host;
GRANT SELECT ON fleet.hosts TO praxis_fleet_operator;

ALTER TABLE fleet.kill ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fleet.kill FOR SELECT TO praxis_fleet_host
    USING (scope = '*' OR scope = fleet.my_host());
CREATE POLICY every ON fleet.kill TO praxis_fleet_operator USING (true) WITH CHECK (true);
GRANT SELECT ON fleet.kill TO praxis_fleet_host;
GRANT SELECT, INSERT, UPDATE (engaged, reason) ON fleet.kill TO praxis_fleet_operator;

ALTER TABLE fleet.holds ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fleet.holds TO praxis_fleet_host
    USING (host = fleet.my_host()) WITH CHECK (host = fleet.my_host());
CREATE POLICY every ON fleet.holds FOR SELECT TO praxis_fleet_operator USING (true);
GRANT SELECT, INSERT, UPDATE (open) ON fleet.holds TO praxis_fleet_host;
GRANT SELECT ON fleet.holds TO praxis_fleet_operator;

ALTER TABLE fleet.decisions ENABLE ROW LEVEL SECURITY;
CREATE POLICY own ON fleet.decisions TO praxis_fleet_host USING (host = fleet.my_host());
CREATE POLICY every ON fleet.decisions TO praxis_fleet_operator USING (true) WITH CHECK (true);
GRANT SELECT, UPDATE (applied_at, outcome) ON fleet.decisions TO praxis_fleet_host;
GRANT SELECT, INSERT (host, request_id, approve, digest, ttl_secs, note)
    ON fleet.decisions TO praxis_fleet_operator;
