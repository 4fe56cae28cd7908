//! The session: the one lifecycle every command that runs something goes through. It owns the
//! signal handling, the system changes (guards, restored in reverse order when it ends, however
//! it ends) and the wait for the end (a duration, a signal, or the work being done).

use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use super::{signals, Outcome};
use crate::restore::Guard;

pub struct Session {
    guards: Vec<Box<dyn Guard>>,
    started: Instant,
}

impl Session {
    /// Starts a session: from here on the first Ctrl-C asks it to stop.
    pub fn start() -> Result<Session> {
        let signals = signals::Installed::new().context("could not install signal handlers")?;
        let mut session = Session { guards: Vec::new(), started: Instant::now() };
        session.hold(signals);
        Ok(session)
    }

    /// Keeps a system change until the session ends. Returns true, for `&&` chains.
    pub fn hold(&mut self, guard: impl Guard + 'static) -> bool {
        self.guards.push(Box::new(guard));
        true
    }

    /// What the session holds, oldest first.
    pub fn held(&self) -> Vec<&'static str> {
        self.guards.iter().map(|g| g.name()).collect()
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// The first stop signal so far.
    pub fn signal(&self) -> Option<i32> {
        signals::received()
    }

    /// Waits, calling `tick` every `every`, until `duration` has passed since `from` or `done()`
    /// says the work is over (complete), or a stop signal comes (interrupted). An error from
    /// `tick` ends the wait. A stop signal, or anything that calls `sys::wake` (a thread that
    /// ends its work), cuts the wait short, so `every` can be long without making it slow to
    /// answer.
    pub fn wait(
        &self,
        from: Instant,
        duration: Option<Duration>,
        every: Duration,
        done: impl FnMut() -> bool,
        tick: impl FnMut() -> Result<()>,
    ) -> Result<Outcome> {
        self.wait_paced(from, duration, || every, done, tick)
    }

    /// [`Session::wait`] with the time to the next `tick` asked of `pace` each time.
    pub fn wait_paced(
        &self,
        from: Instant,
        duration: Option<Duration>,
        mut pace: impl FnMut() -> Duration,
        mut done: impl FnMut() -> bool,
        mut tick: impl FnMut() -> Result<()>,
    ) -> Result<Outcome> {
        loop {
            let every = pace();
            let left = duration.map_or(every, |d| d.saturating_sub(from.elapsed()));
            crate::sys::wait_wake(every.min(left));
            if let Some(sig) = self.signal() {
                return Ok(Outcome::Interrupted(sig));
            }
            if duration.is_some_and(|d| from.elapsed() >= d) || done() {
                return Ok(Outcome::Complete);
            }
            tick()?;
        }
    }
}

impl Drop for Session {
    fn drop(&mut self) {
        while let Some(guard) = self.guards.pop() {
            drop(guard);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::sync::{Arc, Mutex};

    struct Mark(&'static str, Arc<Mutex<Vec<&'static str>>>);

    impl Guard for Mark {
        fn name(&self) -> &'static str {
            self.0
        }
    }

    impl Drop for Mark {
        fn drop(&mut self) {
            self.1.lock().unwrap().push(self.0);
        }
    }

    #[test]
    fn guards_are_restored_in_reverse_order_when_the_session_ends() {
        let log = Arc::new(Mutex::new(Vec::new()));
        {
            let mut s = Session::start().unwrap();
            s.hold(Mark("first", Arc::clone(&log)));
            s.hold(Mark("second", Arc::clone(&log)));
            assert_eq!(s.held(), ["signal handlers", "first", "second"]);
        }
        assert_eq!(*log.lock().unwrap(), ["second", "first"]);
    }

    #[test]
    fn a_wait_ends_when_the_work_is_done_or_the_duration_passes() {
        let s = Session::start().unwrap();
        let mut asked = 0;
        let done = || {
            asked += 1;
            asked >= 3
        };
        let ended = s.wait(Instant::now(), None, Duration::from_millis(1), done, || Ok(())).unwrap();
        assert_eq!(ended, Outcome::Complete);
        assert_eq!(asked, 3);
        let mut n = 0;
        let counted = s.wait(
            Instant::now(),
            Some(Duration::from_millis(30)),
            Duration::from_millis(1),
            || false,
            || {
                n += 1;
                Ok(())
            },
        );
        assert_eq!(counted.unwrap(), Outcome::Complete);
        assert!(n >= 1, "ticked while waiting");
        let failed = s.wait(Instant::now(), None, Duration::from_millis(1), || false, || anyhow::bail!("disk full"));
        assert_eq!(failed.unwrap_err().to_string(), "disk full");
    }

    #[test]
    fn a_wake_from_another_thread_cuts_a_long_wait_short() {
        use std::sync::atomic::{AtomicBool, Ordering};
        let s = Session::start().unwrap();
        let (finished, returned) = (Arc::new(AtomicBool::new(false)), Arc::new(AtomicBool::new(false)));
        let worker = {
            let (finished, returned) = (Arc::clone(&finished), Arc::clone(&returned));
            std::thread::spawn(move || {
                std::thread::sleep(Duration::from_millis(50));
                finished.store(true, Ordering::SeqCst);
                // Other tests wait on the same descriptor and may take a wake: wake until seen.
                while !returned.load(Ordering::SeqCst) {
                    crate::sys::wake();
                    std::thread::sleep(Duration::from_millis(10));
                }
            })
        };
        let t = Instant::now();
        let ended = s.wait(t, None, Duration::from_secs(60), || finished.load(Ordering::SeqCst), || Ok(())).unwrap();
        returned.store(true, Ordering::SeqCst);
        worker.join().unwrap();
        assert_eq!(ended, Outcome::Complete);
        // Asleep for its full minute it would have returned after 60 s.
        assert!(t.elapsed() < Duration::from_secs(30), "woken after {:?}", t.elapsed());
    }
}
