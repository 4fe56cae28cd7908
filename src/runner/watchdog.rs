//! The watchdog of a run (issue 29): a run whose threads count no sample for the longest gap
//! between two samples of its probe plus a margin has stopped making progress (a peer that
//! stopped answering, a thread that cannot run). It ends `failed` with the reason, so a study
//! goes on with its next cell and a monitor says what broke instead of serving the same numbers
//! for ever. Until its first sample a run gets its whole span (its duration, a monitor's window)
//! plus the margin: a warm-up takes what it takes. The runner learns of samples at its
//! collections (every second, when a thread hands its buffer over at its next sample): a run
//! that stalls before its first collection has counted none yet. A probe whose samples are
//! events (noise above a threshold) has no watchdog.

use std::time::{Duration, Instant};

use anyhow::Result;

/// Beyond the probe's gap: two round trips lost in a row (2 s each) are not yet a stall.
pub(super) const MARGIN: Duration = Duration::from_secs(5);
/// The runner looks at every collection (every second at most): a look this late means the
/// runner itself did not run (stopped with Ctrl-Z, starved), and it blames no probe for that.
const LATE_LOOK: Duration = Duration::from_secs(2);

pub(super) struct Watchdog {
    /// The longest a thread goes between two samples; `None`: no watchdog.
    gap: Option<Duration>,
    /// The run's duration, or its window: the time it gets before its first sample.
    span: Option<Duration>,
    /// Samples counted when it last changed, and when that was.
    counted: u64,
    since: Instant,
    /// The runner's last look.
    looked: Instant,
}

impl Watchdog {
    pub(super) fn new(gap: Option<Duration>, span: Option<Duration>) -> Watchdog {
        let now = Instant::now();
        Watchdog { gap, span, counted: 0, since: now, looked: now }
    }

    /// How long the run may go without a new sample; `None`: for ever (a run bounded by its
    /// loop count only, before its first sample; a probe without a watchdog).
    fn limit(&self) -> Option<Duration> {
        let gap = self.gap?;
        if self.counted > 0 {
            Some(gap + MARGIN)
        } else {
            self.span.map(|span| span.max(gap) + MARGIN)
        }
    }

    /// Takes the samples counted so far (over the whole run); an error saying so once no
    /// sample came for the limit.
    pub(super) fn check(&mut self, counted: u64) -> Result<()> {
        let now = Instant::now();
        if counted != self.counted || now - self.looked > LATE_LOOK {
            self.counted = counted;
            self.since = now;
        }
        self.looked = now;
        if self.limit().is_none_or(|limit| now - self.since < limit) {
            return Ok(());
        }
        let idle = (now - self.since).as_secs_f64();
        let (after, given) = match self.counted {
            0 => (String::new(), "its span"),
            n => (format!(" after {n}"), "the probe's longest gap"),
        };
        anyhow::bail!(
            "no progress: no sample for {idle:.1} s{after} ({given} and a margin of {} s): the probe stopped measuring (a peer that stopped answering, or a thread that cannot run)",
            MARGIN.as_secs()
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The watchdog as it would be had its last change been `ago`, the runner looking all along.
    fn aged(mut dog: Watchdog, ago: Duration) -> Watchdog {
        dog.since = Instant::now() - ago;
        dog
    }

    #[test]
    fn a_run_that_counts_nothing_for_its_gap_and_the_margin_fails_and_one_that_counts_does_not() {
        let gap = Duration::from_millis(10);
        let mut dog = Watchdog::new(Some(gap), Some(Duration::from_secs(60)));
        dog.check(5).unwrap();
        let mut dog = aged(dog, gap + MARGIN);
        dog.check(7).expect("a new sample is progress");
        let mut dog = aged(dog, gap + MARGIN - Duration::from_millis(100));
        dog.check(7).expect("not yet the limit");
        let mut dog = aged(dog, gap + MARGIN);
        let err = dog.check(7).unwrap_err().to_string();
        assert!(err.starts_with("no progress: no sample for ") && err.contains(" s after 7 (the probe's"), "{err}");
    }

    #[test]
    fn before_its_first_sample_a_run_gets_its_span_and_the_margin() {
        let span = Duration::from_secs(60);
        let mut dog = aged(Watchdog::new(Some(Duration::ZERO), Some(span)), MARGIN * 2);
        dog.check(0).expect("a warm-up within its span");
        let mut dog = aged(dog, span + MARGIN);
        assert!(dog.check(0).unwrap_err().to_string().contains(" s (its span and a margin"));
        let mut counted_only = aged(Watchdog::new(Some(Duration::ZERO), None), span * 10);
        counted_only.check(0).expect("a run bounded by its count alone waits for its first sample");
    }

    #[test]
    fn events_and_a_runner_that_did_not_look_blame_no_probe() {
        let mut events = aged(Watchdog::new(None, Some(Duration::from_secs(1))), MARGIN * 10);
        events.check(3).unwrap();
        events.since = Instant::now() - MARGIN * 10;
        events.check(3).expect("noise may see no gap above its threshold for minutes");
        let mut dog = Watchdog::new(Some(Duration::ZERO), None);
        dog.check(3).unwrap();
        // Stopped (Ctrl-Z) for longer than the margin: the runner did not look either.
        dog.since = Instant::now() - MARGIN * 3;
        dog.looked = dog.since;
        dog.check(3).expect("the time the runner did not run is not the probe's");
    }
}
