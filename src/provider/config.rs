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
    let text = match std::fs::read(OsStr::from_bytes(path)) {
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

/// Reads every regular file of `dir` (directory order) and returns the
/// driver names in upstream's load order: upstream puts each name at the
/// front of its list, so the last name read is loaded first.
pub fn read_dir(dir: &str) -> Vec<Vec<u8>> {
    let rd = match std::fs::read_dir(dir) {
        Ok(r) => r,
        Err(_) => {
            eprintln!("{PFX}Warning: couldn't open config directory '{dir}'.");
            return Vec::new();
        }
    };
    let mut names = Vec::new();
    // readdir also reports "." and ".." (directories, so skipped upstream).
    for ent in rd.flatten() {
        let mut path = dir.as_bytes().to_vec();
        path.push(b'/');
        path.extend_from_slice(ent.file_name().as_bytes());
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
