//! Which providers to load: the driver configuration directory (every
//! regular file in it, lines `driver NAME`, `#` comments) and the
//! `RDMAV_DRIVERS` / `IBV_DRIVERS` lists, parsed with upstream's rules and
//! warnings.

use std::ffi::OsStr;
use std::os::unix::ffi::OsStrExt;

use crate::log::PFX;

/// The configuration directory (`IBV_CONFIG_DIR`, fixed when the library is
/// built, like upstream's; no run-time override exists upstream).
pub const CONFIG_DIR: &str = match option_env!("IBVERBS_CONFIG_DIR") {
    Some(d) => d,
    None => "/etc/libibverbs.d",
};

const WS: &[u8] = b"\t ";
const DELIM: &[u8] = b"\n\t ";

/// C `strsep`: the token up to the first delimiter, and what follows that
/// delimiter (`None` when there was none).
fn strsep<'a>(s: &'a [u8], delims: &[u8]) -> (&'a [u8], Option<&'a [u8]>) {
    match s.iter().position(|c| delims.contains(c)) {
        Some(i) => (&s[..i], Some(&s[i + 1..])),
        None => (s, None),
    }
}

fn skip(s: &[u8], set: &[u8]) -> usize {
    s.iter().take_while(|c| set.contains(c)).count()
}

/// One line of a config file, as upstream reads it.
#[derive(Debug, PartialEq, Eq)]
pub enum Line<'a> {
    /// Empty or a comment.
    Skip,
    /// `driver NAME` (NAME may be empty, as upstream accepts it).
    Driver(&'a [u8]),
    /// Anything else: the first field, for the warning.
    Bad(&'a [u8]),
}

/// Parses one line (`getline` output, with its newline if it had one).  C
/// string rules apply: the line ends at its first NUL byte.
pub fn parse_line(line: &[u8]) -> Line<'_> {
    let line = match line.iter().position(|&c| c == 0) {
        Some(n) => &line[..n],
        None => line,
    };
    let config = &line[skip(line, WS)..];
    if matches!(config.first(), Some(b'\n') | Some(b'#')) {
        return Line::Skip;
    }
    let (field, rest) = strsep(config, DELIM);
    match rest {
        Some(rest) if field == b"driver" => {
            let rest = &rest[skip(rest, WS)..];
            Line::Driver(strsep(rest, DELIM).0)
        }
        _ => Line::Bad(field),
    }
}

/// Splits file contents into `getline` lines (each with its newline).
pub fn lines(text: &[u8]) -> impl Iterator<Item = &[u8]> {
    text.split_inclusive(|&c| c == b'\n')
}

/// Reads one config file: the driver names in file order.  Warnings go to
/// stderr with upstream's text.
pub fn read_file(path: &[u8]) -> Vec<Vec<u8>> {
    let shown = String::from_utf8_lossy(path);
    let text = match read_small(path) {
        Ok(t) => t,
        Err(_) => {
            eprintln!("{PFX}Warning: couldn't read config file {shown}.");
            return Vec::new();
        }
    };
    let mut names = Vec::new();
    for l in lines(&text) {
        match parse_line(l) {
            Line::Skip => {}
            Line::Driver(n) => names.push(n.to_vec()),
            Line::Bad(f) => {
                eprintln!(
                    "{PFX}Warning: ignoring bad config directive '{}' in file '{shown}'.",
                    String::from_utf8_lossy(f)
                );
            }
        }
    }
    names
}

/// A regular file's contents with as few system calls as can be: `open`,
/// `read`s until one returns less than asked (the end of a regular file),
/// `close`.
fn read_small(path: &[u8]) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut f = std::fs::File::open(OsStr::from_bytes(path))?;
    let mut text = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = match f.read(&mut chunk) {
            Ok(n) => n,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        text.extend_from_slice(&chunk[..n]);
        if n < chunk.len() {
            return Ok(text);
        }
    }
}

/// The entries of directory `dir` in directory order, each with its type
/// as the kernel reports it (`DT_*`; `DT_UNKNOWN` when the file system does
/// not tell), "." and ".." left out.  Read with `getdents64` into a small
/// buffer (`opendir` would take one the size of the file system's block,
/// half a megabyte on 9p, and a `fstat` to learn it).
pub fn dir_entries(dir: &[u8]) -> std::io::Result<Vec<(Vec<u8>, u8)>> {
    use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};
    let c = std::ffi::CString::new(dir).map_err(|_| std::io::Error::from_raw_os_error(libc::ENOENT))?;
    // SAFETY: c is a NUL-terminated path living across the call.
    let fd = unsafe {
        libc::open(
            c.as_ptr(),
            libc::O_RDONLY | libc::O_NONBLOCK | libc::O_DIRECTORY | libc::O_CLOEXEC,
        )
    };
    if fd < 0 {
        return Err(std::io::Error::last_os_error());
    }
    // SAFETY: fd was just opened and is owned by nothing else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut buf = vec![0u8; 8192];
    let mut out = Vec::new();
    loop {
        // SAFETY: getdents64 writes at most buf.len() bytes into buf, which
        // is writable and lives across the call.
        let n = unsafe { libc::syscall(libc::SYS_getdents64, fd.as_raw_fd(), buf.as_mut_ptr(), buf.len()) };
        if n < 0 {
            let e = std::io::Error::last_os_error();
            if e.kind() == std::io::ErrorKind::Interrupted {
                continue;
            }
            return Err(e);
        }
        if n == 0 {
            return Ok(out);
        }
        let data = &buf[..n as usize];
        let mut off = 0;
        // struct linux_dirent64: d_ino (8), d_off (8), d_reclen (2),
        // d_type (1), d_name (NUL-terminated, padded to d_reclen).
        while off + 19 <= data.len() {
            let reclen = usize::from(u16::from_ne_bytes([data[off + 16], data[off + 17]]));
            if reclen < 19 || off + reclen > data.len() {
                return Err(std::io::Error::from_raw_os_error(libc::EIO));
            }
            let rec = &data[off..off + reclen];
            let name = &rec[19..];
            let name = &name[..name.iter().position(|&b| b == 0).unwrap_or(name.len())];
            if name != b"." && name != b".." {
                out.push((name.to_vec(), rec[18]));
            }
            off += reclen;
        }
    }
}

/// Reads every regular file of `dir` (directory order) and returns the
/// driver names in upstream's load order: upstream puts each name at the
/// front of its list, so the last name read is loaded first.
pub fn read_dir(dir: &str) -> Vec<Vec<u8>> {
    let entries = match dir_entries(dir.as_bytes()) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("{PFX}Warning: couldn't open config directory '{dir}'.");
            return Vec::new();
        }
    };
    let mut names = Vec::new();
    // Upstream also meets "." and ".." (directories, so skipped).
    for (name, kind) in entries {
        let mut path = dir.as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(&name);
        // The entry's type as readdir reports it spares the stat of a
        // regular file or a directory (anything else is looked at).
        match kind {
            libc::DT_REG => {
                names.extend(read_file(&path));
                continue;
            }
            libc::DT_DIR => continue,
            _ => {}
        }
        match std::fs::metadata(OsStr::from_bytes(&path)) {
            Err(_) => {
                eprintln!(
                    "{PFX}Warning: couldn't stat config file '{}'.",
                    String::from_utf8_lossy(&path)
                );
            }
            Ok(m) if m.is_file() => names.extend(read_file(&path)),
            Ok(_) => {}
        }
    }
    names.reverse();
    names
}

/// The provider names of `RDMAV_DRIVERS` (else `IBV_DRIVERS`), split at
/// `:` and `;` (empty names included, as upstream's `strsep`); none when
/// the process runs setuid.
pub fn env_drivers() -> Vec<Vec<u8>> {
    if crate::env::is_setuid() {
        return Vec::new();
    }
    let v = crate::env::get("RDMAV_DRIVERS").or_else(|| crate::env::get("IBV_DRIVERS"));
    match v {
        Some(v) => split_list(v.as_bytes()),
        None => Vec::new(),
    }
}

/// `strsep(&list, ":;")` until the list is used up.
pub fn split_list(s: &[u8]) -> Vec<Vec<u8>> {
    s.split(|&c| c == b':' || c == b';').map(<[u8]>::to_vec).collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn lines_as_upstream() {
        assert_eq!(parse_line(b"driver mlx5\n"), Line::Driver(b"mlx5"));
        assert_eq!(parse_line(b"  \tdriver\t  rxe extra\n"), Line::Driver(b"rxe"));
        assert_eq!(parse_line(b"driver mlx5"), Line::Driver(b"mlx5"));
        assert_eq!(parse_line(b"driver\n"), Line::Driver(b""));
        assert_eq!(parse_line(b"driver  \n"), Line::Driver(b""));
        assert_eq!(parse_line(b"driver"), Line::Bad(b"driver"));
        assert_eq!(parse_line(b"# driver x\n"), Line::Skip);
        assert_eq!(parse_line(b"   # c\n"), Line::Skip);
        assert_eq!(parse_line(b"\n"), Line::Skip);
        assert_eq!(parse_line(b"  \n"), Line::Skip);
        assert_eq!(parse_line(b"   "), Line::Bad(b""));
        assert_eq!(parse_line(b"drivers x\n"), Line::Bad(b"drivers"));
        assert_eq!(parse_line(b"Driver x\n"), Line::Bad(b"Driver"));
        assert_eq!(parse_line(b"driver a\0b\n"), Line::Driver(b"a"));
        assert_eq!(parse_line(b"\0driver a\n"), Line::Bad(b""));
    }

    #[test]
    fn split_lines() {
        let v: Vec<&[u8]> = lines(b"a\nb\n\nc").collect();
        assert_eq!(v, [&b"a\n"[..], b"b\n", b"\n", b"c"]);
    }

    #[test]
    fn env_lists() {
        assert_eq!(
            split_list(b"mlx5:rxe;/x/y"),
            [b"mlx5".to_vec(), b"rxe".to_vec(), b"/x/y".to_vec()]
        );
        assert_eq!(split_list(b""), [Vec::<u8>::new()]);
        assert_eq!(split_list(b"a::b"), [b"a".to_vec(), vec![], b"b".to_vec()]);
    }

    #[test]
    fn directory_order_reversed() {
        let dir = std::env::temp_dir().join(format!("ibvrs-conf-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("sub")).unwrap();
        std::fs::write(dir.join("a.driver"), b"driver one\ndriver two\n").unwrap();
        let d = dir.to_str().unwrap();
        assert_eq!(read_dir(d), [b"two".to_vec(), b"one".to_vec()]);
        std::fs::remove_dir_all(&dir).unwrap();
        assert!(read_dir(d).is_empty());
    }
}
