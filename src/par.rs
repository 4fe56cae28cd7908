//! Work spread over the machine's CPUs for the report's pure computations (each run's
//! worst-case fit is independent of the others'): results come back in the input's order.

use std::sync::atomic::{AtomicUsize, Ordering};

/// `f` over every item, on up to one thread per CPU, each taking the next item as it finishes
/// one (the items' costs differ by orders of magnitude); the results in the items' order.
pub fn map<T: Sync, R: Send>(items: &[T], f: impl Fn(&T) -> R + Sync) -> Vec<R> {
    let workers = std::thread::available_parallelism().map_or(1, |n| n.get()).min(items.len());
    if workers <= 1 {
        return items.iter().map(f).collect();
    }
    let next = AtomicUsize::new(0);
    let mut done: Vec<(usize, R)> = std::thread::scope(|s| {
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                s.spawn(|| {
                    let mut mine = Vec::new();
                    loop {
                        let i = next.fetch_add(1, Ordering::Relaxed);
                        let Some(item) = items.get(i) else { return mine };
                        mine.push((i, f(item)));
                    }
                })
            })
            .collect();
        handles.into_iter().flat_map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))).collect()
    });
    done.sort_by_key(|(i, _)| *i);
    done.into_iter().map(|(_, r)| r).collect()
}

#[cfg(test)]
mod tests {
    use super::map;

    #[test]
    fn results_keep_the_inputs_order_whatever_each_costs() {
        let items: Vec<u64> = (0..200).collect();
        let out = map(&items, |&i| {
            // Early items cost the most, so they finish last.
            std::thread::sleep(std::time::Duration::from_micros((200 - i) * 20));
            i * 3
        });
        assert_eq!(out, items.iter().map(|i| i * 3).collect::<Vec<_>>());
        assert!(map(&[] as &[u64], |&i| i).is_empty());
    }
}
