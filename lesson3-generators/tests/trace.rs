trace_check::trace_suite!(shared::Lesson::Three, lesson3_generators::crawl);
