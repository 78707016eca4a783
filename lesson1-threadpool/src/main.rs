//! `lesson1`: the command-line program. All of it is `shared::cli::run`:
//! the lesson lives in the library's `crawl`.

fn main() -> std::process::ExitCode {
    shared::cli::run(shared::Lesson::One, lesson1_threadpool::crawl)
}
