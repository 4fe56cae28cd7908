#![forbid(unsafe_code)]

/// Stack of the threads rtbench does not size itself (its measuring threads, the metrics
/// server's pool, load generators). Under mlockall every byte of a thread's stack is resident,
/// and std's 2 MiB default made eight threads of a monitor 16 MB of its RSS.
const THREAD_STACK: &str = "524288";

fn main() {
    // std reads this once, at the first spawn: before anything runs. A user's own value stays.
    if std::env::var_os("RUST_MIN_STACK").is_none() {
        std::env::set_var("RUST_MIN_STACK", THREAD_STACK);
    }
    let invocation = match rtbench::cli::parse_from(std::env::args_os()) {
        Ok(cli) => cli,
        Err(e) => {
            use clap::error::ErrorKind;
            if matches!(e.kind(), ErrorKind::DisplayHelp | ErrorKind::DisplayVersion) {
                e.exit();
            }
            if e.kind() == ErrorKind::DisplayHelpOnMissingArgumentOrSubcommand {
                let _ = e.print();
                std::process::exit(2);
            }
            // One line: what is wrong; the usage block clap adds is one `--help` away.
            let text = e.render().to_string();
            let mut lines = text.lines().map(str::trim).filter(|l| !l.is_empty());
            let first = lines.next().unwrap_or("invalid arguments").trim_start_matches("error: ");
            // "the following required arguments were not provided:" names them on the next lines.
            let named = if first.ends_with(':') {
                lines.take_while(|l| !l.starts_with("Usage:")).collect::<Vec<_>>().join(", ")
            } else {
                String::new()
            };
            eprintln!("{first}{}{named} (see --help)", if named.is_empty() { "" } else { " " });
            std::process::exit(2);
        }
    };
    rtbench::app::put_back_abandoned();
    match rtbench::cli::validate(invocation).and_then(rtbench::app::run) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::exit(rtbench::error::exit_code(&e));
        }
    }
}
