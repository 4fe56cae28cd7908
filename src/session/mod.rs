//! The session: the one lifecycle every command that changes the system goes through (a
//! measuring run, a study, sysbench, load, a pingpong server, kernels). It owns the signal
//! handling, the system changes (guards, each a [`Held`](crate::restore::Held) change or made of
//! them, restored in reverse order when it ends, however it ends) and the wait for the end (a
//! duration, a signal, or the work being done).

use std::any::Any;
use std::cell::RefCell;
use std::time::{Duration, Instant};

use anyhow::{Context, Result};

use crate::model::RunStatus;
use crate::restore::Guard;

pub mod signals;

/// How a run, or any wait of a session, ended: its time or work was done, or a signal came.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Complete,
    Interrupted(i32),
}

impl Outcome {
    pub fn status(self) -> RunStatus {
        match self {
            Outcome::Complete => RunStatus::Complete,
            Outcome::Interrupted(_) => RunStatus::Interrupted,
        }
    }

    /// 0, or 128 + the signal, as a shell reports it.
    pub fn exit_code(self) -> i32 {
        match self {
            Outcome::Complete => 0,
            Outcome::Interrupted(sig) => 128 + sig,
        }
    }
}

pub struct Session {
    /// Held changes, oldest first. In a cell so a step of the wait (which borrows the session)
    /// can reach one it holds, such as the tracer.
    guards: RefCell<Vec<Box<dyn Guard>>>,
    started: Instant,
}

impl Session {
    /// Starts a session: from here on the first Ctrl-C asks it to stop.
    pub fn start() -> Result<Session> {
        let signals = signals::Installed::new().context("could not install signal handlers")?;
        let mut session = Session { guards: RefCell::new(Vec::new()), started: Instant::now() };
        session.hold(signals);
        Ok(session)
    }

    /// Starts a session whose stop signals are blocked (for the rest of the process: one that
    /// came late would end rtbench at once when unblocked), for a command that takes them itself
    /// between looks at its child processes (`sys::wait_stop_signal`): `kernels`, whose Ctrl-C
    /// stops a guest rather than rtbench. [`Session::signal`] sees none of them.
    pub fn taking_signals() -> Result<Session> {
        crate::sys::block_stop_signals().context("could not block the stop signals")?;
        Ok(Session { guards: RefCell::new(Vec::new()), started: Instant::now() })
    }

    /// Keeps a system change until the session ends. Returns true, for `&&` chains.
    pub fn hold(&mut self, guard: impl Guard + 'static) -> bool {
        self.guards.get_mut().push(Box::new(guard));
        true
    }

    /// What the session holds, oldest first.
    pub fn held(&self) -> Vec<&'static str> {
        self.guards.borrow().iter().map(|g| g.name()).collect()
    }

    /// Calls `f` with the newest change of type `T` the session holds; None when it holds none.
    ///
    /// # Panics
    /// When `f` itself asks the session for a held change (the cell is already borrowed).
    pub fn with<T: Guard, R>(&self, f: impl FnOnce(&mut T) -> R) -> Option<R> {
        let mut guards = self.guards.borrow_mut();
        let found = guards.iter_mut().rev().find_map(|g| (g.as_mut() as &mut dyn Any).downcast_mut::<T>());
        found.map(f)
    }

    /// Takes the newest change of type `T` back from the session, to end it before the session
    /// does (a load stopped to report what it did); None when it holds none.
    pub fn release<T: Guard>(&mut self) -> Option<T> {
        let guards = self.guards.get_mut();
        let at = guards.iter().rposition(|g| (g.as_ref() as &dyn Any).is::<T>())?;
        let taken: Box<dyn Any> = guards.remove(at);
        taken.downcast::<T>().ok().map(|b| *b)
    }

    pub fn elapsed(&self) -> Duration {
        self.started.elapsed()
    }

    /// Sleeps for `d`, or until a stop signal comes: the caller sees the signal.
    pub fn pause(&self, d: Duration) {
        let from = Instant::now();
        while self.signal().is_none() {
            let Some(left) = d.checked_sub(from.elapsed()).filter(|l| !l.is_zero()) else { return };
            crate::sys::wait_wake(left);
        }
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
        while let Some(guard) = self.guards.get_mut().pop() {
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

    struct Count(u32);

    impl Guard for Count {
        fn name(&self) -> &'static str {
            "count"
        }
    }

    #[test]
    fn a_held_change_can_be_reached_and_released_by_its_type() {
        let log = Arc::new(Mutex::new(Vec::new()));
        let mut s = Session::start().unwrap();
        assert_eq!(s.with(|c: &mut Count| c.0), None, "none held yet");
        s.hold(Count(1));
        s.hold(Mark("mark", Arc::clone(&log)));
        s.hold(Count(2));
        assert_eq!(s.with(|c: &mut Count| std::mem::replace(&mut c.0, 20)), Some(2), "the newest of its type");
        let released = s.release::<Count>().map(|c| c.0);
        assert_eq!(released, Some(20), "the change made through with() is the one released");
        assert_eq!(s.with(|c: &mut Count| c.0), Some(1));
        let mark = s.release::<Mark>().expect("held");
        assert!(log.lock().unwrap().is_empty(), "a released change is the caller's to end");
        assert_eq!(s.held(), ["signal handlers", "count"]);
        drop(mark);
        assert_eq!(*log.lock().unwrap(), ["mark"]);
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
