trace_check::trace_suite!(shared::Lesson::Four, lesson4_asyncio_style::crawl);
