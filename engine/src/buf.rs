//! Payload memory: the patterned arena sends come from (registered for zero copy), and the
//! provided-buffer rings that multishot and bundle receives fill.

use std::ptr::NonNull;
use std::sync::atomic::{AtomicU16, Ordering};

use io_uring::types::BufRingEntry;

use crate::ring::Ring;
use crate::verify::{fill_payload, phase, PERIOD};
use ringperf_core::error::{Error, Result};

/// What receive buffers are aligned to.
pub const CACHE_LINE: usize = 64;

/// Anonymous, page-aligned, pre-faulted memory, unmapped on drop.
pub struct Mapping {
    ptr: NonNull<u8>,
    len: usize,
}

impl Mapping {
    pub fn new(len: usize) -> Result<Mapping> {
        let len = len.max(1);
        // SAFETY: an anonymous private mapping has no preconditions.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_POPULATE,
                -1,
                0,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(
                format!("mapping {} KiB of payload memory", len / 1024),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(Mapping { ptr: NonNull::new(p.cast()).expect("mmap never returns NULL on success"), len })
    }

    pub fn as_ptr(&self) -> *mut u8 {
        self.ptr.as_ptr()
    }

    pub fn len(&self) -> usize {
        self.len
    }

    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        // SAFETY: we own `len` bytes of mapped, writable memory.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.as_ptr(), self.len) }
    }

    pub fn slice(&self, off: usize, len: usize) -> &[u8] {
        assert!(off + len <= self.len);
        // SAFETY: in bounds of our mapping (checked above).
        unsafe { std::slice::from_raw_parts(self.ptr.as_ptr().add(off), len) }
    }
}

impl Drop for Mapping {
    fn drop(&mut self) {
        // SAFETY: unmapping exactly what mmap returned.
        unsafe { libc::munmap(self.ptr.as_ptr().cast(), self.len) };
    }
}

// SAFETY: the mapping is plain memory owned by this value.
unsafe impl Send for Mapping {}

/// `slots` identical patterned buffers, each long enough to start a send of `max_len`
/// bytes at any pattern phase.
pub struct PayloadArena {
    mem: Mapping,
    slot_len: usize,
    slots: usize,
}

impl PayloadArena {
    pub fn new(slots: usize, max_len: usize) -> Result<PayloadArena> {
        let slot_len = PayloadArena::slot_len(max_len);
        let mut mem = Mapping::new(slots.max(1) * slot_len)?;
        for s in mem.as_mut_slice().chunks_mut(slot_len) {
            fill_payload(s);
        }
        Ok(PayloadArena { mem, slot_len, slots: slots.max(1) })
    }

    /// One message per header, for sends on sockets a workload makes per operation: slot
    /// `i` holds `headers[i]` then `body_len` bytes of the pattern, so a header and its
    /// payload leave in one send. With no headers, one slot of pattern that every owner
    /// shares (see [`PayloadArena::message`]).
    pub fn framed<const H: usize>(headers: &[[u8; H]], body_len: usize) -> Result<PayloadArena> {
        let slot_len = (H + body_len).max(1).next_multiple_of(64);
        let slots = headers.len().max(1);
        let mut mem = Mapping::new(slots * slot_len)?;
        for (i, msg) in mem.as_mut_slice().chunks_mut(slot_len).enumerate() {
            let at = match headers.get(i) {
                Some(h) => {
                    msg[..H].copy_from_slice(h);
                    H
                }
                None => 0,
            };
            fill_payload(&mut msg[at..at + body_len]);
        }
        Ok(PayloadArena { mem, slot_len, slots })
    }

    /// Start of byte `offset` of `owner`'s message in a [`PayloadArena::framed`] arena (the
    /// shared one if it has a single slot).
    #[inline]
    pub fn message(&self, owner: usize, offset: u64) -> *const u8 {
        let slot = if self.slots == 1 { 0 } else { owner };
        debug_assert!(slot < self.slots && (offset as usize) < self.slot_len);
        // SAFETY: slot < slots and offset < slot_len keep the pointer inside the mapping.
        unsafe { self.mem.as_ptr().add(slot * self.slot_len + offset as usize) }
    }

    /// Bytes of one slot for sends of up to `max_len` bytes: room to start at any phase of
    /// the pattern, cache-line aligned.
    pub fn slot_len(max_len: usize) -> usize {
        (max_len + PERIOD).next_multiple_of(64)
    }

    /// Registers the whole arena as fixed buffer 0 of `ring`.
    pub fn register(&self, ring: &mut Ring) -> Result<()> {
        // SAFETY: the arena outlives the ring: workers drop rings before payload memory.
        unsafe { ring.register_buffer(self.mem.as_ptr(), self.mem.len()) }
    }

    /// Start of the bytes of stream offset `offset` in `slot`.
    #[inline]
    pub fn at(&self, slot: usize, offset: u64) -> *const u8 {
        debug_assert!(slot < self.slots);
        // SAFETY: slot < slots and phase < PERIOD keep the pointer inside the mapping.
        unsafe { self.mem.as_ptr().add(slot * self.slot_len + phase(offset)) }
    }

    /// Start of the bytes of stream offset `offset` in `slot`, where the slot holds `span`
    /// bytes (a multiple of the pattern period) that consecutive offsets run through, plus
    /// room for one send past the end: back-to-back sends read adjacent memory.
    #[inline]
    pub fn at_in_span(&self, slot: usize, offset: u64, span: u64) -> *const u8 {
        debug_assert!(slot < self.slots && span.is_multiple_of(PERIOD as u64));
        debug_assert!(span as usize <= self.slot_len);
        // SAFETY: slot < slots and offset % span < span <= slot_len keep the pointer inside
        // the mapping; the creator sized the slot for a send past `span`.
        unsafe { self.mem.as_ptr().add(slot * self.slot_len + (offset % span) as usize) }
    }

    pub fn slots(&self) -> usize {
        self.slots
    }
}

/// A provided-buffer ring: `count` buffers of `size` bytes the kernel picks from.
///
/// Where nobody reads the payload (no --verify), every buffer id points at one landing area
/// of `size` bytes, as `recv` lands every receive in one buffer: the ring still gives the
/// kernel `count` buffers to pick from, but the copy writes into memory that stays in
/// cache instead of sweeping `count * size` bytes.
pub struct BufRing {
    ring_mem: Mapping,
    bufs: Mapping,
    mask: u16,
    tail: u16,
    /// The tail the kernel was last shown: a publish with nothing staged since is skipped.
    published: u16,
    size: usize,
    /// Bytes from one buffer's start to the next: `size` rounded up to a cache line, since
    /// the kernel copies into a misaligned destination far more slowly (see `CopyRecv`);
    /// 0 when the buffers share one landing area.
    stride: usize,
    bgid: u16,
    /// Which buffer sits at each ring position: bundles name only their first buffer.
    bid_at: Vec<u16>,
    /// Where each buffer was last placed.
    pos_of: Vec<u16>,
}

impl BufRing {
    /// `distinct`: every buffer has memory of its own (the payload is read); otherwise all
    /// share one landing area.
    pub fn new(ring: &mut Ring, count: u16, size: usize, bgid: u16, distinct: bool) -> Result<BufRing> {
        let ring_mem = Mapping::new(count as usize * std::mem::size_of::<BufRingEntry>())?;
        let line = size.next_multiple_of(CACHE_LINE);
        let stride = if distinct { line } else { 0 };
        let bufs = Mapping::new(if distinct { count as usize * line } else { line })?;
        // SAFETY: page-aligned zeroed memory of count*16 bytes, owned next to the ring.
        unsafe { ring.register_buf_ring(ring_mem.as_ptr() as u64, count, bgid)? };
        let mut br = BufRing {
            ring_mem,
            bufs,
            mask: count - 1,
            tail: 0,
            published: 0,
            size,
            stride,
            bgid,
            bid_at: vec![0; count as usize],
            pos_of: vec![0; count as usize],
        };
        for bid in 0..count {
            br.recycle(bid);
        }
        br.publish();
        Ok(br)
    }

    pub fn bgid(&self) -> u16 {
        self.bgid
    }

    pub fn buf_size(&self) -> usize {
        self.size
    }

    /// Bytes of memory the kernel lands payload in.
    pub fn landing_bytes(&self) -> usize {
        self.bufs.len()
    }

    /// Stages buffer `bid` at the tail; visible to the kernel after [`BufRing::publish`].
    #[inline]
    pub fn recycle(&mut self, bid: u16) {
        let pos = self.tail & self.mask;
        // SAFETY: pos <= mask < count entries of the ring mapping.
        let e = unsafe { &mut *self.ring_mem.as_ptr().cast::<BufRingEntry>().add(pos as usize) };
        // SAFETY: bid < count (or stride 0), so the address is inside the buffer mapping.
        e.set_addr(unsafe { self.bufs.as_ptr().add(bid as usize * self.stride) } as u64);
        e.set_len(self.size as u32);
        e.set_bid(bid);
        self.bid_at[pos as usize] = bid;
        self.pos_of[bid as usize] = pos;
        self.tail = self.tail.wrapping_add(1);
    }

    /// Publishes the staged tail with release ordering, if anything was staged since the
    /// last publish (the tail moves by at most the ring's count between publishes, so it
    /// cannot come round to the published one).
    #[inline]
    pub fn publish(&mut self) {
        if self.tail == self.published {
            return;
        }
        self.published = self.tail;
        // SAFETY: the tail lives in entry 0's `resv` field of our ring mapping.
        let tail = unsafe { BufRingEntry::tail(self.ring_mem.as_ptr().cast()) } as *const AtomicU16;
        // SAFETY: the field is a naturally aligned u16 the kernel reads atomically.
        unsafe { (*tail).store(self.tail, Ordering::Release) };
    }

    /// The ring position buffer `bid` was last placed at.
    #[inline]
    pub fn position_of(&self, bid: u16) -> u16 {
        self.pos_of[bid as usize]
    }

    /// The buffer placed at ring position `pos` (bundles name only their first buffer).
    #[inline]
    pub fn bid_at(&self, pos: u16) -> u16 {
        self.bid_at[(pos & self.mask) as usize]
    }

    /// The first `len` bytes of buffer `bid`.
    #[inline]
    pub fn data(&self, bid: u16, len: usize) -> &[u8] {
        self.bufs.slice(bid as usize * self.stride, len.min(self.size))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ringperf_core::spec::RingTuning;

    #[test]
    fn provided_buffers_of_any_size_start_on_a_cache_line() {
        let mut ring = Ring::new(&RingTuning::default(), 8).unwrap();
        let br = BufRing::new(&mut ring, 4, 1000, 7, true).unwrap();
        let mut starts = Vec::new();
        for bid in 0..4 {
            let start = br.data(bid, 1000).as_ptr() as usize;
            assert_eq!(start % CACHE_LINE, 0, "buffer {bid}");
            assert_eq!(br.data(bid, 5000).len(), 1000, "a buffer never reads past its size");
            starts.push(start);
        }
        starts.dedup();
        assert_eq!(starts.len(), 4, "distinct buffers never overlap");
        assert!(br.landing_bytes() >= 4 * 1000);
    }

    #[test]
    fn unread_buffers_share_one_landing_area() {
        let mut ring = Ring::new(&RingTuning::default(), 8).unwrap();
        let br = BufRing::new(&mut ring, 16, 65536, 3, false).unwrap();
        let first = br.data(0, 65536).as_ptr();
        assert!((1..16).all(|bid| br.data(bid, 65536).as_ptr() == first));
        assert_eq!(br.landing_bytes(), 65536);
    }
}
