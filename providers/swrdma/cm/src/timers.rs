//! The ids' timers without a pass over every id: the map of ids remembers
//! which of them were handed out for change ([`Tracked`]), and the
//! deadlines of those go into a heap ([`Timers`]) whose stale entries are
//! dropped when they come to the top.  What the earliest deadline is, and
//! which ids are due, then cost in proportion to the ids that changed, not
//! to all of them: `next_deadline` runs after every command and `tick`
//! after every message received, and with thousands of connections a pass
//! over all of them each time was most of the CM's time.

use std::cmp::Reverse;
use std::collections::{btree_map, BTreeMap, BTreeSet, BinaryHeap};

/// A map whose every mutable access (and insert, and remove) is noted, so
/// that whoever keeps something derived from its values can bring just
/// those up to date.
pub struct Tracked<V> {
    map: BTreeMap<u32, V>,
    touched: Vec<u32>,
}

impl<V> Default for Tracked<V> {
    fn default() -> Self {
        Tracked {
            map: BTreeMap::new(),
            touched: Vec::new(),
        }
    }
}

impl<V> Tracked<V> {
    pub fn get(&self, k: &u32) -> Option<&V> {
        self.map.get(k)
    }

    pub fn get_mut(&mut self, k: &u32) -> Option<&mut V> {
        let v = self.map.get_mut(k)?;
        self.touched.push(*k);
        Some(v)
    }

    pub fn insert(&mut self, k: u32, v: V) -> Option<V> {
        self.touched.push(k);
        self.map.insert(k, v)
    }

    pub fn remove(&mut self, k: &u32) -> Option<V> {
        self.touched.push(*k);
        self.map.remove(k)
    }

    pub fn range(&self, r: std::ops::RangeFrom<u32>) -> btree_map::Range<'_, u32, V> {
        self.map.range(r)
    }

    pub fn iter(&self) -> btree_map::Iter<'_, u32, V> {
        self.map.iter()
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// The keys handed out for change since the last call (each once).
    pub fn take_touched(&mut self) -> Vec<u32> {
        let mut t = std::mem::take(&mut self.touched);
        t.sort_unstable();
        t.dedup();
        t
    }
}

/// The deadlines of the ids, and which ids have a peer being watched.
#[derive(Default)]
pub struct Timers {
    /// (deadline, id): an entry is current while the id's deadline is
    /// still that one; others are dropped when they reach the top.
    heap: BinaryHeap<Reverse<(u64, u32)>>,
    watched: BTreeSet<u32>,
}

impl Timers {
    /// Takes in what changed: `now_of(k)` is id `k`'s deadline and
    /// whether its peer is watched (None: the id is gone).  `all` lists
    /// every id's, for when stale entries outnumber the ids (then the
    /// heap is made again from them).
    pub fn sync(
        &mut self,
        touched: Vec<u32>,
        ids: usize,
        now_of: impl Fn(u32) -> Option<(Option<u64>, bool)>,
        all: impl FnOnce() -> Vec<(u32, Option<u64>)>,
    ) {
        for k in touched {
            match now_of(k) {
                Some((deadline, watched)) => {
                    if let Some(d) = deadline {
                        self.heap.push(Reverse((d, k)));
                    }
                    if watched {
                        self.watched.insert(k);
                    } else {
                        self.watched.remove(&k);
                    }
                }
                None => {
                    self.watched.remove(&k);
                }
            }
        }
        if self.heap.len() > 2 * ids + 64 {
            self.heap = all()
                .into_iter()
                .filter_map(|(k, d)| d.map(|d| Reverse((d, k))))
                .collect();
        }
    }

    /// The earliest current deadline (`deadline_of(k)`: id `k`'s deadline
    /// now), stale entries dropped on the way.
    pub fn earliest(&mut self, deadline_of: impl Fn(u32) -> Option<u64>) -> Option<u64> {
        while let Some(&Reverse((d, k))) = self.heap.peek() {
            if deadline_of(k) == Some(d) {
                return Some(d);
            }
            self.heap.pop();
        }
        None
    }

    /// Takes out the ids whose current deadline is at or before `now`
    /// (each once, in deadline order).
    pub fn due(&mut self, now: u64, deadline_of: impl Fn(u32) -> Option<u64>) -> Vec<u32> {
        let mut out = Vec::new();
        while let Some(&Reverse((d, k))) = self.heap.peek() {
            if d > now {
                break;
            }
            self.heap.pop();
            if deadline_of(k) == Some(d) && !out.contains(&k) {
                out.push(k);
            }
        }
        out
    }

    /// Does any id have a peer being watched?
    pub fn any_watched(&self) -> bool {
        !self.watched.is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_entries_give_way_and_due_ids_come_out_once() {
        let mut ids: Tracked<Option<u64>> = Tracked::default();
        let mut t = Timers::default();
        ids.insert(1, Some(50));
        ids.insert(2, Some(30));
        ids.insert(3, None);
        let sync = |ids: &mut Tracked<Option<u64>>, t: &mut Timers| {
            let touched = ids.take_touched();
            let n = ids.len();
            let snapshot: BTreeMap<u32, Option<u64>> = ids.iter().map(|(k, v)| (*k, *v)).collect();
            let all: Vec<(u32, Option<u64>)> = snapshot.iter().map(|(k, v)| (*k, *v)).collect();
            t.sync(touched, n, |k| snapshot.get(&k).map(|d| (*d, d.is_some())), || all);
        };
        sync(&mut ids, &mut t);
        let at = |ids: &Tracked<Option<u64>>| {
            let m: BTreeMap<u32, Option<u64>> = ids.iter().map(|(k, v)| (*k, *v)).collect();
            move |k: u32| m.get(&k).copied().flatten()
        };
        assert_eq!(t.earliest(at(&ids)), Some(30));
        assert!(t.any_watched());
        // id 2's timer moves later: its old entry is stale
        *ids.get_mut(&2).unwrap() = Some(70);
        sync(&mut ids, &mut t);
        assert_eq!(t.earliest(at(&ids)), Some(50));
        // id 1 goes away: nothing before 70
        ids.remove(&1);
        sync(&mut ids, &mut t);
        assert_eq!(t.earliest(at(&ids)), Some(70));
        assert_eq!(t.due(69, at(&ids)), Vec::<u32>::new());
        assert_eq!(t.due(70, at(&ids)), vec![2]);
        assert_eq!(t.earliest(at(&ids)), None, "taken out");
        *ids.get_mut(&2).unwrap() = None;
        sync(&mut ids, &mut t);
        assert!(!t.any_watched());
    }
}
