-- Policy revisions: an operator pushes a patterns.toml and a policy.toml,
-- validated before they are stored; every host loads the latest and
-- reports which revision it runs, and which it refused.

CREATE TABLE fleet.policies (
    number    bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    -- The policy's own revision (a hash of both files) as the push computed it.
    revision  text NOT NULL,
    patterns  text NOT NULL,
    policy    text,
    operator  name NOT NULL DEFAULT session_user,
    pushed_at timestamptz NOT NULL DEFAULT now()
);

ALTER TABLE fleet.hosts
    ADD COLUMN fleet_policy bigint,
    ADD COLUMN fleet_policy_refused bigint,
    ADD COLUMN fleet_policy_error text;
GRANT UPDATE (fleet_policy, fleet_policy_refused, fleet_policy_error)
    ON fleet.hosts TO praxis_fleet_host;

CREATE TRIGGER stamp BEFORE INSERT ON fleet.policies
    FOR EACH ROW EXECUTE FUNCTION fleet.stamp_operator();

-- A change every host acts on: the payload is the trigger's argument and
-- '*' (every host).
CREATE FUNCTION fleet.notify_every_host() RETURNS trigger
    LANGUAGE plpgsql AS $$
BEGIN
    PERFORM pg_notify('praxis_fleet', TG_ARGV[0] || ' *');
    RETURN NULL;
END $$;
CREATE TRIGGER notify AFTER INSERT ON fleet.policies
    FOR EACH ROW EXECUTE FUNCTION fleet.notify_every_host('policy');

-- Operators push and read; hosts only read.
GRANT SELECT ON fleet.policies TO praxis_fleet_host;
GRANT SELECT, INSERT (revision, patterns, policy) ON fleet.policies TO praxis_fleet_operator;
