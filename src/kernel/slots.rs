//! Fixed-capacity storage for the command builder's attribute maps: a command lives on the
//! stack of the verb that runs it (as upstream's command buffers do), so
//! building one costs no allocation, no thread-local pool and no zeroing
//! of room it does not use.

use core::mem::MaybeUninit;

/// Up to `N` values of `T`, in place.  Slots at and after `len` are never
/// read before they are written.
pub struct Stack<T: Copy, const N: usize> {
    len: usize,
    items: MaybeUninit<[T; N]>,
}

impl<T: Copy, const N: usize> Default for Stack<T, N> {
    fn default() -> Self {
        Self::new()
    }
}

impl<T: Copy, const N: usize> Stack<T, N> {
    #[inline]
    pub fn new() -> Self {
        Stack {
            len: 0,
            items: MaybeUninit::uninit(),
        }
    }

    /// Appends `v`; its index.  More than `N` values is a bug of the
    /// caller that sized the command.
    #[inline]
    pub fn push(&mut self, v: T) -> usize {
        let i = self.len;
        assert!(i < N, "command has more entries than its builder holds");
        // SAFETY: `i < N`: slot `i` of the array.
        unsafe { self.items.as_mut_ptr().cast::<T>().add(i).write(v) };
        self.len = i + 1;
        i
    }

    #[inline]
    pub fn len(&self) -> usize {
        self.len
    }

    #[inline]
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    #[inline]
    pub fn get_mut(&mut self, i: usize) -> &mut T {
        assert!(i < self.len);
        // SAFETY: slots below `len` were written by `push`.
        unsafe { &mut *self.items.as_mut_ptr().cast::<T>().add(i) }
    }

    #[inline]
    pub fn get(&self, i: usize) -> T {
        assert!(i < self.len);
        // SAFETY: slots below `len` were written by `push`.
        unsafe { self.items.as_ptr().cast::<T>().add(i).read() }
    }

    pub fn iter(&self) -> impl Iterator<Item = T> + '_ {
        (0..self.len).map(|i| self.get(i))
    }
}
