//! `praxis-run`: the agent's only shell tool.

fn main() {
    // Fail closed until the client is built: 125 is HOLD.
    std::process::exit(125);
}
