#![forbid(unsafe_code)]

fn main() {
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
            let first = text.lines().find(|l| !l.trim().is_empty()).unwrap_or("invalid arguments");
            eprintln!("{} (see --help)", first.trim_start_matches("error: ").trim());
            std::process::exit(2);
        }
    };
    match rtbench::app::run(invocation) {
        Ok(code) => std::process::exit(code),
        Err(e) => {
            eprintln!("Error: {e:#}");
            std::process::exit(rtbench::error::exit_code(&e));
        }
    }
}
