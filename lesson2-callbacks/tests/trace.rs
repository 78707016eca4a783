trace_check::trace_suite!(shared::Lesson::Two, lesson2_callbacks::crawl);
