//! Action contracts: a planner's output checked against a contract file
//! before anything may act on it. The contract is data (`contracts/*.json`,
//! built in); this validator is generic over it.
//!
//! The input must be strict JSON: one value, no comments, no trailing commas,
//! no duplicate keys, nothing but whitespace before or after it.

mod strict;

use std::collections::BTreeMap;

use praxis_proto::{NoteRequest, Verdict};
use serde::Deserialize;
use serde_json::Value;

use crate::exec::{EXIT_HOLD, EXIT_STOP};
use crate::judge::{self, Caller};

/// The contracts built into this binary, by id.
const BUILT_IN: &[(&str, &str)] = &[(
    "guardian01.v1",
    include_str!("../../../contracts/guardian01.v1.json"),
)];

#[derive(Debug, thiserror::Error)]
pub enum ContractError {
    #[error("unknown contract {0} (built in: {1})")]
    Unknown(String, String),
    #[error("contract {0} is invalid: {1}")]
    Invalid(String, String),
}

/// Bounds of one parameter.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields, tag = "kind", rename_all = "snake_case")]
pub enum ParamSpec {
    String { max_chars: Option<usize> },
    Number { min: f64, max: f64 },
}

/// Which veto code each kind of violation carries.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Vetoes {
    pub invalid_json: String,
    pub structure: String,
    pub forbidden_key: String,
    pub unknown_type: String,
    pub unknown_param: String,
    pub param_type: String,
    pub out_of_bounds: String,
}

/// A contract for a plan shaped `{list_key: [{type_key, params_key?}…]}`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Contract {
    pub id: String,
    pub title: String,
    pub note: String,
    pub top_level_keys: Vec<String>,
    pub list_key: String,
    pub min_items: usize,
    pub max_items: usize,
    pub type_key: String,
    pub params_key: String,
    pub types: Vec<String>,
    pub params: BTreeMap<String, ParamSpec>,
    pub forbidden_keys: Vec<String>,
    pub veto: Vetoes,
}

/// Why a plan was vetoed: the code, the offending path, and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Veto {
    pub code: String,
    pub path: String,
    pub reason: String,
}

impl Contract {
    /// A built-in contract by id.
    pub fn built_in(id: &str) -> Result<Contract, ContractError> {
        let (_, text) = BUILT_IN
            .iter()
            .find(|(name, _)| *name == id)
            .ok_or_else(|| {
                let names: Vec<&str> = BUILT_IN.iter().map(|(name, _)| *name).collect();
                ContractError::Unknown(id.to_owned(), names.join(", "))
            })?;
        let contract: Contract = serde_json::from_str(text)
            .map_err(|e| ContractError::Invalid(id.to_owned(), e.to_string()))?;
        if contract.id != id {
            return Err(ContractError::Invalid(
                id.to_owned(),
                format!("its id says {}", contract.id),
            ));
        }
        Ok(contract)
    }

    /// Checks a planner output; the number of actions when it is valid.
    pub fn check(&self, text: &str) -> Result<usize, Veto> {
        let value = strict::parse(text).map_err(|why| Veto {
            code: self.veto.invalid_json.clone(),
            path: String::from("$"),
            reason: format!("$ is not strict JSON: {why}"),
        })?;
        if let Some(path) = self.forbidden_at(&value, "$") {
            return Err(Veto {
                code: self.veto.forbidden_key.clone(),
                reason: format!("forbidden key at {path}: planner self-reporting is prohibited"),
                path,
            });
        }
        let structure = |path: &str, reason: String| Veto {
            code: self.veto.structure.clone(),
            path: path.to_owned(),
            reason,
        };
        let Value::Object(top) = &value else {
            return Err(structure(
                "$",
                String::from("the output must be one JSON object"),
            ));
        };
        if let Some(extra) = top.keys().find(|k| !self.top_level_keys.contains(k)) {
            let path = format!("$.{extra}");
            return Err(structure(
                &path,
                format!("top-level key {path} is not permitted"),
            ));
        }
        let list_path = format!("$.{}", self.list_key);
        let Some(Value::Array(actions)) = top.get(&self.list_key) else {
            return Err(structure(
                &list_path,
                format!("{list_path} must be an array"),
            ));
        };
        if actions.len() < self.min_items || actions.len() > self.max_items {
            return Err(structure(
                &list_path,
                format!(
                    "{list_path} has {} actions; {} to {} are permitted",
                    actions.len(),
                    self.min_items,
                    self.max_items
                ),
            ));
        }
        for (i, action) in actions.iter().enumerate() {
            self.check_action(action, &format!("{list_path}[{i}]"))?;
        }
        Ok(actions.len())
    }

    fn check_action(&self, action: &Value, path: &str) -> Result<(), Veto> {
        let veto = |code: &str, path: String, reason: String| Veto {
            code: code.to_owned(),
            path,
            reason,
        };
        let Value::Object(fields) = action else {
            return Err(veto(
                &self.veto.structure,
                path.to_owned(),
                format!("{path} must be an object"),
            ));
        };
        if let Some(extra) = fields
            .keys()
            .find(|k| **k != self.type_key && **k != self.params_key)
        {
            let at = format!("{path}.{extra}");
            return Err(veto(
                &self.veto.structure,
                at.clone(),
                format!("{at} is not permitted"),
            ));
        }
        let type_path = format!("{path}.{}", self.type_key);
        match fields.get(&self.type_key) {
            Some(Value::String(t)) if self.types.contains(t) => {}
            Some(other) => {
                return Err(veto(
                    &self.veto.unknown_type,
                    type_path.clone(),
                    format!(
                        "{type_path} is {other}, not one of: {}",
                        self.types.join(", ")
                    ),
                ));
            }
            None => {
                return Err(veto(
                    &self.veto.structure,
                    type_path.clone(),
                    format!("{type_path} is required"),
                ));
            }
        }
        let params_path = format!("{path}.{}", self.params_key);
        let params = match fields.get(&self.params_key) {
            None => return Ok(()),
            Some(Value::Object(params)) => params,
            Some(_) => {
                return Err(veto(
                    &self.veto.structure,
                    params_path.clone(),
                    format!("{params_path} must be an object"),
                ));
            }
        };
        for (key, value) in params {
            let at = format!("{params_path}.{key}");
            let Some(spec) = self.params.get(key) else {
                return Err(veto(
                    &self.veto.unknown_param,
                    at.clone(),
                    format!("{at} is not an allowed parameter"),
                ));
            };
            self.check_param(spec, value, at)?;
        }
        Ok(())
    }

    fn check_param(&self, spec: &ParamSpec, value: &Value, at: String) -> Result<(), Veto> {
        let wrong_type = |want: &str| Veto {
            code: self.veto.param_type.clone(),
            reason: format!("{at} must be a {want}, got {value}"),
            path: at.clone(),
        };
        let out_of_bounds = |reason: String| Veto {
            code: self.veto.out_of_bounds.clone(),
            reason,
            path: at.clone(),
        };
        match spec {
            ParamSpec::String { max_chars } => {
                let Value::String(s) = value else {
                    return Err(wrong_type("string"));
                };
                if let Some(max) = max_chars
                    && s.chars().count() > *max
                {
                    return Err(out_of_bounds(format!(
                        "{at} has {} characters, at most {max} are permitted",
                        s.chars().count()
                    )));
                }
            }
            ParamSpec::Number { min, max } => {
                let Some(n) = value.as_f64().filter(|_| value.is_number()) else {
                    return Err(wrong_type("number"));
                };
                if n < *min || n > *max {
                    return Err(out_of_bounds(format!(
                        "{at} is {n}, outside {min} to {max}"
                    )));
                }
            }
        }
        Ok(())
    }

    /// The path of the first forbidden key at any depth.
    fn forbidden_at(&self, value: &Value, path: &str) -> Option<String> {
        match value {
            Value::Object(map) => map.iter().find_map(|(k, v)| {
                let at = format!("{path}.{k}");
                if self.forbidden_keys.contains(k) {
                    Some(at)
                } else {
                    self.forbidden_at(v, &at)
                }
            }),
            Value::Array(items) => items
                .iter()
                .enumerate()
                .find_map(|(i, v)| self.forbidden_at(v, &format!("{path}[{i}]"))),
            _ => None,
        }
    }
}

/// The verdict on a plan as `praxis-run plan` prints it, and its exit status.
#[must_use]
#[derive(Debug)]
pub struct PlanReport {
    pub json: Value,
    pub code: i32,
}

/// Checks `text` against the contract `id` and records the verdict in the
/// audit log. Valid: ALLOW, exit 0. Vetoed: STOP naming the offending path,
/// exit 126. A plan that cannot be audited, or an unknown contract: HOLD,
/// exit 125, never ALLOW.
pub fn plan(id: &str, text: &str, caller: &Caller) -> PlanReport {
    let hold = |reason: String| PlanReport {
        json: serde_json::json!({
            "decision": "HOLD",
            "execution_prevented": true,
            "contract": id,
            "reason": reason,
        }),
        code: EXIT_HOLD,
    };
    let contract = match Contract::built_in(id) {
        Ok(contract) => contract,
        Err(e) => return hold(e.to_string()),
    };
    let checked = contract.check(text);
    let mut detail = serde_json::Map::new();
    detail.insert("contract".into(), id.into());
    detail.insert("plan_bytes".into(), text.len().into());
    let (decision, reason) = match &checked {
        Ok(n) => {
            detail.insert("actions".into(), (*n).into());
            (
                Verdict::Allow,
                format!("the plan satisfies {}", contract.title),
            )
        }
        Err(veto) => {
            detail.insert("veto".into(), veto.code.clone().into());
            detail.insert("path".into(), veto.path.clone().into());
            (Verdict::Stop, veto.reason.clone())
        }
    };
    let recorded = judge::note(NoteRequest {
        kind: String::from("contract_checked"),
        session: caller.session.clone(),
        runtime: caller.runtime.clone(),
        tool_call_id: caller.tool_call_id.clone(),
        decision: Some(decision),
        reason: Some(reason.clone()),
        detail,
    })
    .map(drop);
    match (checked, recorded) {
        (Ok(n), Ok(())) => PlanReport {
            json: serde_json::json!({
                "decision": "ALLOW",
                "contract": id,
                "actions": n,
                "reason": reason,
                "note": contract.note,
            }),
            code: 0,
        },
        (Ok(_), Err(e)) => hold(format!("the plan is valid but could not be audited: {e}")),
        (Err(veto), recorded) => PlanReport {
            json: serde_json::json!({
                "decision": "STOP",
                "veto": veto.code,
                "execution_prevented": true,
                "contract": id,
                "path": veto.path,
                "reason": veto.reason,
                "audited": recorded.is_ok(),
            }),
            code: EXIT_STOP,
        },
    }
}

#[cfg(test)]
mod tests;
