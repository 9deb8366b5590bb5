use super::*;

fn guardian() -> Contract {
    Contract::built_in("guardian01.v1").unwrap()
}

fn veto(text: &str) -> Veto {
    guardian().check(text).unwrap_err()
}

#[test]
fn a_valid_plan_passes() {
    let plan = r#"{"actions":[{"type":"navigate","params":{"target":"water_glass","speed_mps":0.5}},
        {"type":"grasp","params":{"force_n":2.0,"duration_s":0}},{"type":"stop"},
        {"type":"speak","params":{"utterance":"done"}}]}"#;
    assert_eq!(guardian().check(plan), Ok(4));
    assert_eq!(
        guardian().check("\n {\"actions\":[{\"type\":\"wait\"}]}\n"),
        Ok(1)
    );
}

#[test]
fn unknown_types_and_params_are_g1() {
    let v = veto(r#"{"actions":[{"type":"fly"}]}"#);
    assert_eq!(
        (v.code.as_str(), v.path.as_str()),
        ("G1", "$.actions[0].type")
    );
    let v = veto(r#"{"actions":[{"type":"wait","params":{"color":"red"}}]}"#);
    assert_eq!(
        (v.code.as_str(), v.path.as_str()),
        ("G1", "$.actions[0].params.color")
    );
    let v = veto(r#"{"actions":[{"type":"grasp","params":{"target":{"id":1}}}]}"#);
    assert_eq!(
        (v.code.as_str(), v.path.as_str()),
        ("G1", "$.actions[0].params.target")
    );
}

#[test]
fn out_of_bounds_is_g2() {
    let v = veto(r#"{"actions":[{"type":"navigate","params":{"speed_mps":0.51}}]}"#);
    assert_eq!(
        (v.code.as_str(), v.path.as_str()),
        ("G2", "$.actions[0].params.speed_mps")
    );
    let v = veto(r#"{"actions":[{"type":"wait","params":{"duration_s":-0.1}}]}"#);
    assert_eq!(v.code, "G2");
    let long = "x".repeat(201);
    let v = veto(&format!(
        r#"{{"actions":[{{"type":"speak","params":{{"utterance":"{long}"}}}}]}}"#
    ));
    assert_eq!(v.code, "G2");
    let ok = "é".repeat(200);
    assert!(
        guardian()
            .check(&format!(
                r#"{{"actions":[{{"type":"speak","params":{{"utterance":"{ok}"}}}}]}}"#
            ))
            .is_ok()
    );
}

#[test]
fn structure_is_closed() {
    let v = veto(r#"{"actions":[{"type":"stop"}],"plan_id":1}"#);
    assert_eq!((v.code.as_str(), v.path.as_str()), ("G1", "$.plan_id"));
    assert_eq!(veto(r#"{"actions":[]}"#).path, "$.actions");
    let seventeen = vec![r#"{"type":"wait"}"#; 17].join(",");
    assert_eq!(
        veto(&format!(r#"{{"actions":[{seventeen}]}}"#)).path,
        "$.actions"
    );
    assert_eq!(veto(r#"[{"type":"stop"}]"#).path, "$");
    assert_eq!(
        veto(r#"{"actions":[{"type":"stop","why":1}]}"#).path,
        "$.actions[0].why"
    );
}

#[test]
fn forbidden_keys_are_vetoed_at_any_depth() {
    let v = veto(r#"{"actions":[{"type":"grasp","params":{"target":"cup","confidence":0.9}}]}"#);
    assert_eq!(
        (v.code.as_str(), v.path.as_str()),
        ("G1", "$.actions[0].params.confidence")
    );
    assert!(v.reason.contains("forbidden"));
    assert_eq!(
        veto(r#"{"actions":[{"type":"stop"}],"reasoning":"x"}"#).path,
        "$.reasoning"
    );
}

#[test]
fn only_strict_json_is_read() {
    for text in [
        r#"{"actions":[{"type":"stop"}]} trailing"#,
        r#"Here you go: {"actions":[{"type":"stop"}]}"#,
        r#"{"actions":[{"type":"stop"},]}"#,
        "{\"actions\":[{\"type\":\"stop\"}] // done\n}",
        r#"{"actions":[{"type":"stop","type":"fly"}]}"#,
        r#"{"actions":[{"type":"stop"}],"actions":[]}"#,
        "```json\n{\"actions\":[{\"type\":\"stop\"}]}\n```",
        "",
    ] {
        let v = veto(text);
        assert_eq!((v.code.as_str(), v.path.as_str()), ("G1", "$"), "{text}");
    }
}

#[test]
fn unknown_contracts_are_refused() {
    assert!(matches!(
        Contract::built_in("nope.v1"),
        Err(ContractError::Unknown(..))
    ));
}
