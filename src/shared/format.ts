// Durations as people read them, shared by the tree views and the dashboard webview so both say
// the same thing ("1.5 s", "3 min 20 s", "2 d 4 h"), and engine strings made safe to print.

const HOUR_MS = 3_600_000;

export function formatDuration(ms: number): string {
  // Round first, then pick the unit: 59.6 s is "1 min 0 s", never "60 s" or "0 min 60 s".
  if (Math.round(ms) < 1000) return `${Math.round(ms)} ms`;
  const tenths = Math.round(ms / 100);
  if (tenths < 100) return `${(tenths / 10).toFixed(1)} s`;
  const seconds = Math.round(ms / 1000);
  if (seconds < 60) return `${seconds} s`;
  if (seconds < 3600) return `${Math.floor(seconds / 60)} min ${seconds % 60} s`;
  // From an hour on, what is smaller than the last unit is cut off; just below an hour the
  // rounded seconds already made it one.
  const m = Math.floor((ms < HOUR_MS ? seconds * 1000 : ms) / 60_000);
  const h = Math.floor(m / 60);
  if (h < 24) return `${h} h ${m % 60} min`;
  return `${Math.floor(h / 24)} d ${h % 24} h`;
}

/**
 * Control characters (C0, DEL, C1), line and paragraph separators and bidirectional overrides,
 * written as visible escapes. For every engine string printed where people read lines (the CLI's
 * log, the Output channel, notifications): an item name with a newline cannot forge a log line,
 * and one with ANSI escapes or a bell cannot move the cursor, recolour the terminal or ring.
 */
export function escapeControls(text: string): string {
  return text.replace(/[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069]/g, (c) => {
    switch (c) {
      case '\n':
        return '\\n';
      case '\r':
        return '\\r';
      case '\t':
        return '\\t';
      default:
        return `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`;
    }
  });
}

// One time format for the sidebar (extension host) and the dashboard (webview), following the
// runtime's locale: 12- or 24-hour as the user's locale says, and the same in both, so one log
// entry never shows two different times.
const clockFormat = new Intl.DateTimeFormat(undefined, { hour: 'numeric', minute: '2-digit', second: '2-digit' });
const dateTimeFormat = new Intl.DateTimeFormat(undefined, { year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: '2-digit', second: '2-digit' });

/** The time of day of an ISO timestamp ("7:41:05 PM" in en-US, "19:41:05" in de); the input as it is if it is no date. */
export function formatClock(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : clockFormat.format(d);
}

/** Date and time of an ISO timestamp, in the same locale as formatClock. */
export function formatDateTime(iso: string): string {
  const d = new Date(iso);
  return Number.isNaN(d.getTime()) ? iso : dateTimeFormat.format(d);
}

// "3 min. ago" / "vor 3 Min." in the runtime's locale, as the clock formats above follow it.
const relativeFormat = new Intl.RelativeTimeFormat(undefined, { numeric: 'auto', style: 'short' });
const RELATIVE_UNITS: [Intl.RelativeTimeFormatUnit, number][] = [
  ['day', 86_400_000],
  ['hour', HOUR_MS],
  ['minute', 60_000],
];

/**
 * How long ago (or in how long) an ISO timestamp is from `now`, in the largest whole unit, minutes
 * at the least ("this minute"): lenses redraw by the minute. The input as it is if it is no date.
 */
export function formatRelativeTime(iso: string, now = Date.now()): string {
  const t = new Date(iso).getTime();
  if (Number.isNaN(t)) return iso;
  const ms = t - now;
  for (const [unit, size] of RELATIVE_UNITS) {
    if (Math.abs(ms) >= size || unit === 'minute') {
      // Intl formatting costs microseconds; a 10,000-entry queue file asks for few distinct values.
      const value = Math.trunc(ms / size);
      const key = `${value} ${unit}`;
      let text = relativeTexts.get(key);
      if (text === undefined) {
        if (relativeTexts.size > 1000) relativeTexts.clear();
        relativeTexts.set(key, (text = relativeFormat.format(value, unit)));
      }
      return text;
    }
  }
  return iso;
}
const relativeTexts = new Map<string, string>();

/** Bytes of memory: "812 KiB", "150.3 MiB", "2.1 GiB". */
export function formatMemory(bytes: number): string {
  if (bytes < 1024 * 1024) return `${Math.round(bytes / 1024)} KiB`;
  if (bytes < 1024 ** 3) return `${(bytes / 1024 ** 2).toFixed(1)} MiB`;
  return `${(bytes / 1024 ** 3).toFixed(1)} GiB`;
}

/** What an attempt cost, in one line: "CPU 1.2 s · peak 150.3 MiB"; "not measured" without figures. */
export function formatResources(r: { cpuMs: number | null; peakRssBytes: number | null } | null | undefined): string {
  if (!r || (r.cpuMs === null && r.peakRssBytes === null)) return 'not measured';
  const parts: string[] = [];
  if (r.cpuMs !== null) parts.push(`CPU ${formatDuration(r.cpuMs)}`);
  if (r.peakRssBytes !== null) parts.push(`peak ${formatMemory(r.peakRssBytes)}`);
  return parts.join(' · ');
}
