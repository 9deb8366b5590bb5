//! praxisd: the Praxis daemon.

fn main() {
    std::process::exit(125);
}
