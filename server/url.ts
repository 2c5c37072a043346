/** decodeURIComponent, or null for text that is not valid percent-encoded UTF-8 (`%E0%A4%A`), which it would throw on. */
export function safeDecode(text: string): string | null {
  try {
    return decodeURIComponent(text);
  } catch {
    return null;
  }
}
