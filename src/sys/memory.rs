//! Giving freed heap back to the kernel: glibc's malloc keeps a process's
//! peak, which a daemon that reads a large index now and then and idles in
//! between would otherwise hold all day (`rrr watch`).

/// Return the free pages at the top and inside the heap to the kernel
/// (glibc's `malloc_trim(0)`); a no-op with other C libraries.
pub(crate) fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim takes no pointers and only unmaps memory that
    // malloc holds free; it takes malloc's own locks, as any allocation does.
    unsafe {
        libc::malloc_trim(0);
    }
}
