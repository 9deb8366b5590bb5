//! The shell front end must be total: any text, any argv, no panic.

#![no_main]

use libfuzzer_sys::fuzz_target;
use praxis_policy::shell::{parse_argv, parse_script};

fuzz_target!(|data: &[u8]| {
    let Ok(text) = std::str::from_utf8(data) else {
        return;
    };
    let script = parse_script(text);
    // Every command index a pipe feed names must exist.
    for cmd in &script.commands {
        if let praxis_policy::shell::Feed::Pipe { from } = &cmd.stdin {
            assert!(from.iter().all(|&i| i < script.commands.len()));
        }
    }
    let argv: Vec<String> = text.split('\0').map(str::to_owned).collect();
    let _ = parse_argv(&argv);
});
