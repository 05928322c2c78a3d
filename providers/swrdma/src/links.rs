//! The two kinds of same-machine link, and the one lock order between a
//! link's producer side (`Link::tx_lock`, which also guards its response
//! backlog) and a QP's lock (`Qp::st`):
//!
//! * **posting** (post_send, retransmission after a NAK): the producer side
//!   of an [`OutLink`] first, then the QP's lock;
//! * **responding** (ACKs, NAKs, READ data, atomic results): with the QP's
//!   lock held, the producer side of an [`InLink`].
//!
//! A link is outgoing or incoming for its whole life (whoever connected),
//! so the two orders never meet on one lock — and the types keep them
//! apart: only an `OutLink` gives the posting side, only an `InLink` the
//! responding side, and nothing else in the provider takes `tx_lock` (the
//! structure suite checks that this file is the only one that names it).
//! A producer side taken with no QP lock held, for housekeeping, is
//! [`idle_producer`].

use std::collections::VecDeque;
use std::ops::Deref;
use std::sync::Arc;
use swrdma_ring::{Link, Resp, TurnGuard};

/// The producer side of a link: its ring's only writer, with the backlog
/// of responses that did not fit.
pub type Producer<'a> = TurnGuard<'a, VecDeque<Resp>>;

/// A link this context opened: its requests go out on it, their responses
/// come back.
#[derive(Clone)]
pub struct OutLink(Arc<Link>);

impl OutLink {
    /// None: `l` is an incoming link.
    pub fn new(l: Arc<Link>) -> Option<OutLink> {
        l.outgoing.then_some(OutLink(l))
    }

    /// The producer side, for posting: taken before any QP lock.
    pub fn producer(&self) -> Producer<'_> {
        self.0.tx_lock.lock()
    }

    /// The same, when free now.
    pub fn try_producer(&self) -> Option<Producer<'_>> {
        self.0.tx_lock.try_lock()
    }

    /// Whether this is link `l`.
    pub fn is(&self, l: &Arc<Link>) -> bool {
        Arc::ptr_eq(&self.0, l)
    }
}

impl Deref for OutLink {
    type Target = Link;
    fn deref(&self) -> &Link {
        &self.0
    }
}

/// A link a peer opened to this context: requests come in on it, our
/// responses go back.
#[derive(Clone, Copy)]
pub struct InLink<'a>(&'a Link);

impl<'a> InLink<'a> {
    /// None: `l` is an outgoing link.
    pub fn new(l: &'a Link) -> Option<InLink<'a>> {
        (!l.outgoing).then_some(InLink(l))
    }

    /// The producer side, for responding: taken with the QP's lock held.
    pub fn producer(&self) -> Producer<'a> {
        self.0.tx_lock.lock()
    }

    /// The same, when free now.
    pub fn try_producer(&self) -> Option<Producer<'a>> {
        self.0.tx_lock.try_lock()
    }
}

impl Deref for InLink<'_> {
    type Target = Link;
    fn deref(&self) -> &Link {
        self.0
    }
}

/// The producer side of any link when free now, for housekeeping that
/// holds no QP lock (giving back idle ring pages).
pub fn idle_producer(l: &Link) -> Option<Producer<'_>> {
    l.tx_lock.try_lock()
}
