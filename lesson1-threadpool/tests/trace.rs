trace_check::trace_suite!(shared::Lesson::One, lesson1_threadpool::crawl);
