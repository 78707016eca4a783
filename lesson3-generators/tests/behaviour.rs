shared::behaviour_suite!(shared::Lesson::Three, lesson3_generators::crawl);

/// The exit status, as the program sets it: 0 when a server answered (even
/// brokenly), 1 with a hint when nothing did.
#[test]
fn exit_status_follows_status_lines() {
    shared::behaviour::exit_status_follows_status_lines(env!("CARGO_BIN_EXE_lesson3"), &[]);
}

/// On a terminal the live status line replaces the per-URL lines; piped,
/// the lines stay.
#[test]
fn status_line_on_a_terminal() {
    shared::behaviour::status_line_on_a_terminal(env!("CARGO_BIN_EXE_lesson3"));
}

// More hosts than sockets: every URL fetched, robots.txt fetches counted in
// the socket budget (see `shared::behaviour::hosts`).
shared::hosts_suite!(shared::Lesson::Three, lesson3_generators::crawl_with_budget);
shared::hosts_property!(shared::Lesson::Three, lesson3_generators::crawl_with_budget);

// Every path gives back what it took: crawls where fetches fail in every
// way a fetch can, with budgets of 1 to 3 sockets (see
// `shared::behaviour::faults`).
shared::faults_property!(shared::Lesson::Three, lesson3_generators::crawl_with_budget);
