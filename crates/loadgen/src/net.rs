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
//! It implements hyper's `Read`/`Write`; writes go through tokio unchanged.

use hyper::rt::{Read, ReadBufCursor, Write};
use hyper_util::rt::TokioIo;
use nix::sys::socket::{ControlMessageOwned, MsgFlags, recv, recvmsg, setsockopt, sockopt};
use nix::sys::time::TimeSpec;
use std::io::{self, IoSliceMut};
use std::os::fd::{AsRawFd, RawFd};
use std::pin::Pin;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
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
}

impl StampedIo {
    /// Wraps `stream`, asking the kernel for receive timestamps (best effort).
    pub fn new(stream: TcpStream) -> (Self, RxStamp) {
        let _ = setsockopt(&stream, sockopt::ReceiveTimestampns, &true);
        let stamp = RxStamp::default();
        let io = StampedIo {
            io: TokioIo::new(stream),
            stamp: stamp.clone(),
            scratch: vec![0; 64 * 1024],
            cmsg: nix::cmsg_space!(TimeSpec),
        };
        (io, stamp)
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

impl Read for StampedIo {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        mut buf: ReadBufCursor<'_>,
    ) -> Poll<io::Result<()>> {
        let StampedIo {
            io,
            stamp,
            scratch,
            cmsg,
        } = self.get_mut();
        let stream = io.inner();
        let want = buf.remaining().min(scratch.len());
        loop {
            ready!(stream.poll_read_ready(cx))?;
            let fd = stream.as_raw_fd();
            let read = || {
                let want = match stamp.precise() {
                    true => {
                        let (upto, behind) = through_first_event(fd, &mut scratch[..want])?;
                        stamp.set_behind(behind);
                        upto.max(1)
                    }
                    false => want,
                };
                recv_stamped(fd, &mut scratch[..want], cmsg)
            };
            match stream.try_io(Interest::READABLE, read) {
                Ok((n, ts)) => {
                    if let Some(ts) = ts {
                        stamp.set(ts);
                    }
                    buf.put_slice(&scratch[..n]);
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
}
