//! A TCP stream whose reads carry the kernel's receive timestamp.
//!
//! With `SO_TIMESTAMPNS` the kernel notes when each segment reached the socket; [`StampedIo`]
//! reads with `recvmsg` and keeps the timestamp of the latest read in a shared [`RxStamp`]. The
//! response reader uses it as the arrival time of the bytes it is given, so TTFT and ITL do not
//! include the time the client took to get to them (a busy or starved client still stamps
//! exactly). Where the kernel gives no timestamp, the reader falls back to its own clock.
//!
//! A TCP read reports the timestamp of the *last* segment it consumed, so a client that reads late
//! and finds two events queued would stamp the first with the second's time. Until a response's
//! first token is in, the reader asks for [`RxStamp::set_precise`] reads: the stream peeks and reads
//! only up to the end of the first queued SSE event (`\n\n`), so that event gets its own stamp.
//! One case stays uncertain: Linux merges segments queued on a socket that is not being read,
//! keeping the newest timestamp. When more bytes than the first event are already queued, the
//! read is flagged ([`RxStamp::behind`]): its stamp may be late by up to the gap between events.
//! That case is what a client that reads late meets: a runtime thread that lost its core to
//! another process (on two threads sharing cores with the server, tens of milliseconds), or a
//! burst of connections to set up. So while a response waits for its first token, the connection
//! is also watched by the `Stamper`: one thread of its own, doing nothing else, that wakes on
//! every segment that reaches the socket and peeks (without consuming) what is queued, noting
//! "the bytes up to stream offset N had arrived by kernel time T" before later segments can merge
//! into them. A read then takes the earliest such note that covers it. The runtime may get to
//! the bytes late; their stamp no longer depends on it.
//!
//! It implements hyper's `Read`/`Write`; writes go through tokio unchanged.

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use nix::sys::epoll::{Epoll, EpollCreateFlags, EpollEvent, EpollFlags, EpollTimeout};
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recv, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use std::collections::HashMap;
use std::io::{self, IoSliceMut};
use std::os::fd::{AsFd, AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::task::{Context, Poll, ready};
use std::time::Duration;
use tokio::io::Interest;
use tokio::net::TcpStream;

/// Unix nanoseconds at which the latest read's bytes reached the socket (0 = unknown), and
/// whether reads should stop at the end of the first queued event.
#[derive(Debug, Clone, Default)]
pub struct RxStamp(Arc<(AtomicU64, AtomicBool, AtomicBool)>);

impl RxStamp {
    /// The latest kernel receive time, if the kernel gave one.
    pub fn get(&self) -> Option<u64> {
        Some(self.0.0.load(Ordering::Relaxed)).filter(|ns| *ns > 0)
    }

    fn set(&self, ns: u64) {
        self.0.0.store(ns, Ordering::Relaxed);
    }

    /// Read event by event (one extra `MSG_PEEK` per read) while `on`.
    pub fn set_precise(&self, on: bool) {
        self.0.1.store(on, Ordering::Relaxed);
    }

    fn precise(&self) -> bool {
        self.0.1.load(Ordering::Relaxed)
    }

    /// The latest precise read found more than one event queued (its stamp may be late).
    pub fn behind(&self) -> bool {
        self.0.2.load(Ordering::Relaxed)
    }

    fn set_behind(&self, on: bool) {
        self.0.2.store(on, Ordering::Relaxed);
    }
}

/// The stream, its stamp, and a read buffer reused across reads.
#[derive(Debug)]
pub struct StampedIo {
    io: TokioIo<TcpStream>,
    stamp: RxStamp,
    scratch: Vec<u8>,
    cmsg: Vec<u8>,
    /// Shared with the [`Stamper`] while it watches this connection.
    watch: Arc<Watch>,
    /// The stamper's key for this connection, while it is watched.
    watched: Option<u64>,
}

impl StampedIo {
    /// Wraps `stream`, asking the kernel for receive timestamps (best effort).
    pub fn new(stream: TcpStream) -> (Self, RxStamp) {
        let _ = setsockopt(&stream, sockopt::ReceiveTimestampns, &true);
        let stamp = RxStamp::default();
        let watch = Arc::new(Watch {
            fd: stream.as_raw_fd(),
            consumed: AtomicU64::new(0),
            notes: Mutex::new(Notes {
                live: true,
                seen: Vec::new(),
            }),
        });
        let io = StampedIo {
            io: TokioIo::new(stream),
            stamp: stamp.clone(),
            scratch: vec![0; 64 * 1024],
            cmsg: nix::cmsg_space!(TimeSpec),
            watch,
            watched: None,
        };
        (io, stamp)
    }

    /// Starts or stops the stamper's watch to follow [`RxStamp::set_precise`]. Called before
    /// every read: hyper polls a client connection for reading before it writes a request, so a
    /// watch asked for before sending starts before any byte of the answer can arrive.
    fn follow_precise(&mut self) {
        match (self.stamp.precise(), self.watched) {
            (true, None) => {
                self.watched = stamper().and_then(|s| s.watch(self.io.inner(), &self.watch));
            }
            (false, Some(key)) => {
                if let Some(s) = stamper() {
                    s.unwatch(self.io.inner(), key);
                }
                self.watched = None;
                if let Ok(mut n) = self.watch.notes.lock() {
                    n.seen.clear();
                }
            }
            _ => {}
        }
    }

    /// The earliest stamp the stamper noted for the stream up to `end` (all bytes before it had
    /// arrived by then), and whether a note ends exactly there; forgets notes read past.
    fn noted(&self, end: u64) -> (Option<u64>, bool) {
        let Ok(mut n) = self.watch.notes.lock() else {
            return (None, false);
        };
        let covering = n.seen.iter().filter(|(e, _)| *e >= end);
        let best = covering.clone().map(|(_, ts)| *ts).min();
        let exact = n.seen.iter().any(|(e, _)| *e == end);
        n.seen.retain(|(e, _)| *e > end);
        (best, exact)
    }
}

impl Drop for StampedIo {
    fn drop(&mut self) {
        // The descriptor closes after this: the stamper must not peek at its number again.
        if let Ok(mut n) = self.watch.notes.lock() {
            n.live = false;
        }
        if let (Some(key), Some(s)) = (self.watched, stamper()) {
            s.unwatch(self.io.inner(), key);
        }
    }
}

/// What the stamper knows about one connection.
#[derive(Debug)]
struct Watch {
    fd: RawFd,
    /// Bytes the connection has read so far (its stream offset).
    consumed: AtomicU64,
    notes: Mutex<Notes>,
}

#[derive(Debug)]
struct Notes {
    /// The descriptor is still open (cleared, under this lock, before it closes).
    live: bool,
    /// (stream offset, kernel stamp): every byte before the offset had arrived by the stamp.
    seen: Vec<(u64, u64)>,
}

/// Notes kept per connection at most (a response's first token comes within a few events).
const MAX_NOTES: usize = 64;

/// The thread that stamps arrivals on watched connections as they happen (see the module doc).
struct Stamper {
    epoll: Epoll,
    watches: Mutex<HashMap<u64, Arc<Watch>>>,
    next_key: AtomicU64,
}

/// The process's stamper, started on first use; `None` if it could not start (reads then keep
/// their own stamps, as before).
fn stamper() -> Option<&'static Stamper> {
    static STAMPER: OnceLock<Option<&'static Stamper>> = OnceLock::new();
    *STAMPER.get_or_init(|| {
        let epoll = Epoll::new(EpollCreateFlags::EPOLL_CLOEXEC).ok()?;
        let s: &'static Stamper = Box::leak(Box::new(Stamper {
            epoll,
            watches: Mutex::new(HashMap::new()),
            next_key: AtomicU64::new(1),
        }));
        // Named like the runtime's threads: its CPU is the client's.
        std::thread::Builder::new()
            .name(crate::monitor::THREAD_NAME.into())
            .spawn(move || s.run())
            .ok()?;
        Some(s)
    })
}

impl Stamper {
    fn watch(&self, stream: &TcpStream, watch: &Arc<Watch>) -> Option<u64> {
        let key = self.next_key.fetch_add(1, Ordering::Relaxed);
        self.watches.lock().ok()?.insert(key, watch.clone());
        // Edge-triggered: one wake-up per segment that arrives (and one now if data is queued).
        let ev = EpollEvent::new(EpollFlags::EPOLLIN | EpollFlags::EPOLLET, key);
        match self.epoll.add(stream.as_fd(), ev) {
            Ok(()) => Some(key),
            Err(_) => {
                self.forget(key);
                None
            }
        }
    }

    fn unwatch(&self, stream: &TcpStream, key: u64) {
        let _ = self.epoll.delete(stream.as_fd());
        self.forget(key);
    }

    fn forget(&self, key: u64) {
        if let Ok(mut w) = self.watches.lock() {
            w.remove(&key);
        }
    }

    fn run(&self) {
        let mut events = vec![EpollEvent::empty(); 256];
        let mut peek = vec![0u8; 64 * 1024];
        let mut cmsg = nix::cmsg_space!(TimeSpec);
        loop {
            let n = match self.epoll.wait(&mut events, EpollTimeout::NONE) {
                Ok(n) => n,
                Err(nix::errno::Errno::EINTR) => continue,
                Err(_) => return,
            };
            for ev in &events[..n] {
                let watch = self
                    .watches
                    .lock()
                    .ok()
                    .and_then(|w| w.get(&ev.data()).cloned());
                if let Some(w) = watch {
                    note(&w, &mut peek, &mut cmsg);
                }
            }
        }
    }
}

/// Peeks at what is queued on a watched connection and notes when it had arrived.
fn note(w: &Watch, peek: &mut [u8], cmsg: &mut [u8]) {
    let Ok(mut notes) = w.notes.lock() else {
        return;
    };
    if !notes.live || notes.seen.len() >= MAX_NOTES {
        return;
    }
    // Read before peeking: if the connection reads in between, the peek starts later and the
    // offset noted is short of what it covers — a weaker claim, never a false one.
    let base = w.consumed.load(Ordering::Acquire);
    let mut iov = [IoSliceMut::new(peek)];
    let flags = MsgFlags::MSG_PEEK | MsgFlags::MSG_DONTWAIT;
    let Ok(msg) = recvmsg::<()>(w.fd, &mut iov, Some(cmsg), flags) else {
        return;
    };
    let stamp = msg.cmsgs().ok().and_then(|mut c| {
        c.find_map(|c| match c {
            ControlMessageOwned::ScmTimestampns(ts) => Some(Duration::from(ts).as_nanos() as u64),
            _ => None,
        })
    });
    let (Some(ts), true) = (stamp, msg.bytes > 0) else {
        return;
    };
    let end = base + msg.bytes as u64;
    if notes.seen.last().is_none_or(|(e, _)| end > *e) {
        notes.seen.push((end, ts));
    }
}

/// One `recvmsg`: bytes read and the kernel timestamp, if any.
fn recv_stamped(fd: RawFd, buf: &mut [u8], cmsg: &mut [u8]) -> io::Result<(usize, Option<u64>)> {
    let mut iov = [IoSliceMut::new(buf)];
    let msg =
        recvmsg::<()>(fd, &mut iov, Some(cmsg), MsgFlags::empty()).map_err(io::Error::from)?;
    let mut stamp = None;
    if let Ok(cmsgs) = msg.cmsgs() {
        for c in cmsgs {
            if let ControlMessageOwned::ScmTimestampns(ts) = c {
                stamp = Some(Duration::from(ts).as_nanos() as u64);
            }
        }
    }
    Ok((msg.bytes, stamp))
}

/// How many bytes to read so the read ends with the first complete SSE event queued (all that
/// is queued when no event is complete yet), and whether more was queued behind it.
fn through_first_event(fd: RawFd, peek: &mut [u8]) -> io::Result<(usize, bool)> {
    let n = recv(fd, peek, MsgFlags::MSG_PEEK).map_err(io::Error::from)?;
    Ok(match memchr::memmem::find(&peek[..n], b"\n\n") {
        Some(i) => {
            // The `\r\n` that closes an HTTP chunk belongs to the event, not to what follows.
            let end = if peek[i + 2..n].starts_with(b"\r\n") {
                i + 4
            } else {
                i + 2
            };
            (end, end < n)
        }
        None => (n, false),
    })
}

/// One read of up to `want` bytes and its kernel stamp. When `precise`, only through the first
/// complete event queued, and whether more was queued behind it.
fn read_stamped(
    fd: RawFd,
    scratch: &mut [u8],
    cmsg: &mut [u8],
    want: usize,
    precise: bool,
) -> io::Result<(usize, Option<u64>, bool)> {
    let mut behind = false;
    let want = match precise {
        true => {
            let (upto, more) = through_first_event(fd, &mut scratch[..want])?;
            behind = more;
            upto.max(1)
        }
        false => want,
    };
    recv_stamped(fd, &mut scratch[..want], cmsg).map(|(n, ts)| (n, ts, behind))
}

impl StampedIo {
    /// Counts `n` bytes read and stamps them: the earlier of the kernel's stamp `ts` and the
    /// watcher's note, and whether data was queued behind them (`precise` reads only).
    fn account(&mut self, n: usize, mut ts: Option<u64>, mut behind: bool, precise: bool) {
        let end = self.watch.consumed.fetch_add(n as u64, Ordering::Release) + n as u64;
        if self.watched.is_some() {
            let (noted, exact) = self.noted(end);
            ts = match (ts, noted) {
                (Some(a), Some(b)) => Some(a.min(b)),
                (a, b) => a.or(b),
            };
            // Noted as it arrived, before anything queued behind it: exact.
            behind &= !exact;
        }
        if precise {
            self.stamp.set_behind(behind);
        }
        if let Some(ts) = ts {
            self.stamp.set(ts);
        }
    }
}

impl Read for StampedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let this = self.get_mut();
        this.follow_precise();
        let want = buf.remaining().min(this.scratch.len());
        loop {
            let StampedIo {
                io,
                stamp,
                scratch,
                cmsg,
                ..
            } = &mut *this;
            let stream = io.inner();
            ready!(stream.poll_read_ready(cx))?;
            let fd = stream.as_raw_fd();
            let precise = stamp.precise();
            let read = || read_stamped(fd, scratch, cmsg, want, precise);
            match stream.try_io(Interest::READABLE, read) {
                Ok((n, ts, behind)) => {
                    this.account(n, ts, behind, precise);
                    buf.put_slice(&this.scratch[..n]);
                    return Poll::Ready(Ok(()));
                }
                Err(e) if e.kind() == io::ErrorKind::WouldBlock => continue,
                Err(e) => return Poll::Ready(Err(e)),
            }
        }
    }
}

impl Write for StampedIo {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write(cx, buf)
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_flush(cx)
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.get_mut().io).poll_shutdown(cx)
    }

    fn is_write_vectored(&self) -> bool {
        self.io.is_write_vectored()
    }

    fn poll_write_vectored(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        Pin::new(&mut self.get_mut().io).poll_write_vectored(cx, bufs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use tokio::io::AsyncWriteExt;

    #[tokio::test]
    async fn reads_carry_a_kernel_timestamp_close_to_now() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let client = TcpStream::connect(addr).await.unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (io, stamp) = StampedIo::new(client);
        let mut io = TokioIo::new(io);
        // Linux turns receive timestamping on through a deferred static key: on a fresh system the
        // first packets after the first SO_TIMESTAMPNS may come unstamped. Later ones are stamped.
        let mut stamped = None;
        for _ in 0..50 {
            let before = crate::clock::anchor().unix_ns(std::time::Instant::now());
            server.write_all(b"hello").await.unwrap();
            let mut buf = [0u8; 16];
            let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
                .await
                .unwrap();
            let after = crate::clock::anchor().unix_ns(std::time::Instant::now());
            assert_eq!(&buf[..n], b"hello");
            if let Some(ts) = stamp.get() {
                stamped = Some((before, ts, after));
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        }
        let (before, ts, after) = stamped.expect("Linux gives TCP receive timestamps");
        // Realtime vs our anchored monotonic clock: equal within a few ms unless NTP steps.
        assert!(
            ts + 5_000_000 >= before && ts <= after + 5_000_000,
            "{before} {ts} {after}"
        );
    }

    #[tokio::test]
    async fn precise_reads_stop_at_the_first_event_and_say_what_is_queued_behind() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (io, stamp) = StampedIo::new(client);
        stamp.set_precise(true);
        server
            .write_all(b"data: one\n\ndata: two\n\n")
            .await
            .unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let mut io = TokioIo::new(io);
        let mut buf = [0u8; 64];
        let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
            .await
            .unwrap();
        assert_eq!(&buf[..n], b"data: one\n\n");
        assert!(
            stamp.behind(),
            "the second event was queued behind the first"
        );
        let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
            .await
            .unwrap();
        assert_eq!(&buf[..n], b"data: two\n\n");
        assert!(!stamp.behind());
    }

    /// A client that gets to its socket late finds the first event merged with the next one under
    /// the newest kernel stamp; the stamper noted the first as it arrived.
    #[tokio::test]
    async fn a_late_read_keeps_the_stamp_of_when_the_first_event_arrived() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let client = TcpStream::connect(listener.local_addr().unwrap())
            .await
            .unwrap();
        let (mut server, _) = listener.accept().await.unwrap();
        let (mut io, stamp) = StampedIo::new(client);
        stamp.set_precise(true);
        io.follow_precise();
        assert!(io.watched.is_some(), "the stamper watches the connection");
        let now = || crate::clock::anchor().unix_ns(std::time::Instant::now());
        // Receive timestamping may start a few packets late on a fresh system (see above).
        let mut io = TokioIo::new(io);
        let mut buf = [0u8; 64];
        for _ in 0..20 {
            server.write_all(b"data: warm\n\n").await.unwrap();
            let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
                .await
                .unwrap();
            assert_eq!(&buf[..n], b"data: warm\n\n");
            if stamp.get().is_some() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(10)).await;
        }
        let first = now();
        server.write_all(b"data: one\n\n").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(150)).await;
        let second = now();
        server.write_all(b"data: two\n\n").await.unwrap();
        tokio::time::sleep(std::time::Duration::from_millis(20)).await;
        let n = tokio::io::AsyncReadExt::read(&mut io, &mut buf)
            .await
            .unwrap();
        assert_eq!(&buf[..n], b"data: one\n\n");
        let ts = stamp.get().expect("a kernel stamp");
        assert!(
            ts + 5_000_000 >= first && ts < second,
            "stamped {} ms after the first event was written, the second {} ms after",
            (ts as f64 - first as f64) / 1e6,
            (second - first) as f64 / 1e6
        );
        assert!(!stamp.behind(), "noted as it arrived: exact");
    }
}
