//! The chapter's checkpoint: `cargo run --release -p lesson2-callbacks -- --demo -q`
//! ends its report as `docs/src/generated/checkpoints/lesson2.txt` shows.

#[test]
fn the_demo_crawl_ends_as_the_chapter_shows() {
    let file = std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../docs/src/generated/checkpoints/lesson2.txt");
    shared::behaviour::checkpoint(shared::Lesson::Two, lesson2_callbacks::crawl, &file);
}
