//! The chapter's checkpoint: `cargo run --release -p lesson1-threadpool -- --demo -q`
//! ends its report as `docs/src/generated/checkpoints/lesson1.txt` shows.

#[test]
fn the_demo_crawl_ends_as_the_chapter_shows() {
    shared::behaviour::checkpoint(shared::Lesson::One, lesson1_threadpool::crawl);
}
