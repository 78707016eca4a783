shared::behaviour_suite!(shared::Lesson::One, lesson1_threadpool::crawl);
