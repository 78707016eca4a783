//! `lesson3`: the command-line program. All of it is `shared::cli::run`:
//! the lesson lives in the library's `crawl`.

fn main() -> std::process::ExitCode {
    shared::cli::run(shared::Lesson::Three, lesson3_generators::crawl)
}
