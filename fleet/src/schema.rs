//! `praxis fleet init`: the schema, migrated in numbered steps recorded in
//! `fleet.schema_migrations`, the two group roles, and a login role for
//! each host and operator named. Run again, it applies only what is
//! missing and leaves existing roles and their passwords as they are.

use tokio_postgres::{Client, GenericClient};

/// The numbered migrations, in order; each runs once, in a transaction.
const MIGRATIONS: &[(i32, &str, &str)] = &[
    (1, "control", include_str!("../migrations/0001_control.sql")),
    (2, "audit", include_str!("../migrations/0002_audit.sql")),
    (3, "policy", include_str!("../migrations/0003_policy.sql")),
    (4, "memory", include_str!("../migrations/0004_memory.sql")),
];

/// Group roles: every host's login is a member of the first, every
/// operator's of the second.
pub const HOST_GROUP: &str = "praxis_fleet_host";
pub const OPERATOR_GROUP: &str = "praxis_fleet_operator";

#[derive(Debug, thiserror::Error)]
pub enum SchemaError {
    #[error("fleet store: {}", crate::link::chain(.0))]
    Postgres(#[from] tokio_postgres::Error),
    #[error("{0:?} is not a host or operator name (a-z, 0-9, _ and -, at most 63)")]
    Name(String),
    #[error("random source: {0}")]
    Random(std::io::Error),
    #[error("the store's schema is at version {found}, newer than this praxis knows ({known})")]
    Newer { found: i32, known: i32 },
}

/// What `init` did.
#[derive(Debug, Default, serde::Serialize)]
pub struct Initialized {
    /// Migrations applied now, by number.
    pub applied: Vec<i32>,
    pub version: i32,
    /// Login roles made now, with their one-time passwords.
    pub created: Vec<Login>,
    /// Login roles that existed already (passwords unchanged).
    pub existing: Vec<String>,
}

#[derive(Debug, serde::Serialize)]
pub struct Login {
    pub role: String,
    pub password: String,
}

/// Who a login role is for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Host,
    Operator,
}

impl Kind {
    fn group(self) -> &'static str {
        match self {
            Kind::Host => HOST_GROUP,
            Kind::Operator => OPERATOR_GROUP,
        }
    }

    /// The login role of `name`.
    pub fn role(self, name: &str) -> String {
        match self {
            Kind::Host => format!("praxis_host_{name}"),
            Kind::Operator => format!("praxis_operator_{name}"),
        }
    }
}

/// A host or operator name: the characters a role name takes unquoted
/// (and `-`), so that names cannot smuggle SQL.
pub fn check_name(name: &str) -> Result<(), SchemaError> {
    let ok = !name.is_empty()
        && name.len() <= 63
        && name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_' || b == b'-')
        && name.as_bytes()[0].is_ascii_alphanumeric();
    if ok {
        Ok(())
    } else {
        Err(SchemaError::Name(name.to_owned()))
    }
}

fn quoted(identifier: &str) -> String {
    format!("\"{}\"", identifier.replace('"', "\"\""))
}

async fn ensure_group(client: &impl GenericClient, group: &str) -> Result<(), SchemaError> {
    let exists = client
        .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&group])
        .await?
        .is_some();
    if !exists {
        client
            .batch_execute(&format!("CREATE ROLE {} NOLOGIN", quoted(group)))
            .await?;
    }
    Ok(())
}

/// A password from the kernel's random source, hex.
fn password() -> Result<String, SchemaError> {
    let mut bytes = [0u8; 24];
    std::fs::File::open("/dev/urandom")
        .and_then(|mut f| std::io::Read::read_exact(&mut f, &mut bytes))
        .map_err(SchemaError::Random)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Creates or migrates the schema, the groups, and a login for each of
/// `hosts` and `operators`, over an owner's connection.
pub async fn init(
    client: &mut Client,
    hosts: &[String],
    operators: &[String],
) -> Result<Initialized, SchemaError> {
    for name in hosts.iter().chain(operators) {
        check_name(name)?;
    }
    let mut done = Initialized::default();
    let tx = client.transaction().await?;
    // One initializer at a time, whoever else runs `init` now.
    tx.batch_execute(
        "SELECT pg_advisory_xact_lock(hashtext('praxis_fleet_init'));
         CREATE SCHEMA IF NOT EXISTS fleet;
         CREATE TABLE IF NOT EXISTS fleet.schema_migrations (
             version integer PRIMARY KEY,
             name text NOT NULL,
             applied_at timestamptz NOT NULL DEFAULT now());",
    )
    .await?;
    for group in [HOST_GROUP, OPERATOR_GROUP] {
        ensure_group(&tx, group).await?;
    }
    let found: i32 = tx
        .query_one(
            "SELECT coalesce(max(version), 0) FROM fleet.schema_migrations",
            &[],
        )
        .await?
        .get(0);
    let known = MIGRATIONS.last().map_or(0, |m| m.0);
    if found > known {
        return Err(SchemaError::Newer { found, known });
    }
    for (version, name, sql) in MIGRATIONS.iter().filter(|m| m.0 > found) {
        tx.batch_execute(sql).await?;
        tx.execute(
            "INSERT INTO fleet.schema_migrations (version, name) VALUES ($1, $2)",
            &[version, name],
        )
        .await?;
        done.applied.push(*version);
    }
    done.version = known;
    let logins = hosts
        .iter()
        .map(|h| (Kind::Host, h))
        .chain(operators.iter().map(|o| (Kind::Operator, o)));
    for (kind, name) in logins {
        let role = kind.role(name);
        let exists = tx
            .query_opt("SELECT 1 FROM pg_roles WHERE rolname = $1", &[&role])
            .await?
            .is_some();
        if exists {
            done.existing.push(role.clone());
        } else {
            let secret = password()?;
            tx.batch_execute(&format!(
                "CREATE ROLE {} LOGIN PASSWORD '{secret}' IN ROLE {}",
                quoted(&role),
                quoted(kind.group())
            ))
            .await?;
            done.created.push(Login {
                role: role.clone(),
                password: secret,
            });
        }
        if kind == Kind::Host {
            tx.execute(
                "INSERT INTO fleet.hosts (name, db_role) VALUES ($1, $2) ON CONFLICT (name) DO NOTHING",
                &[name, &role],
            )
            .await?;
        }
    }
    tx.commit().await?;
    Ok(done)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_could_carry_sql_are_refused() {
        check_name("ci-runner-7").unwrap();
        for bad in ["", "A", "x\"; DROP", "-x", "a b", &"a".repeat(64)] {
            assert!(check_name(bad).is_err(), "{bad:?}");
        }
    }
}
