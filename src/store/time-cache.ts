/**
 * The last few time texts a store parsed, with their epoch milliseconds. The
 * rows of one claim or one bulk insert share most of their times (one
 * statement, one clock: lease_until, update_time, start_time; available_at
 * and create_time per submit batch), so a handful of slots answers most
 * columns of most rows without parsing.
 */
export class TimeTextCache {
  private readonly texts: string[];
  private readonly ms: number[];
  private next = 0;

  constructor(private readonly slots = 4) {
    this.texts = new Array<string>(slots).fill('');
    this.ms = new Array<number>(slots).fill(0);
  }

  /** A fresh Date for a remembered text (callers may mutate theirs), else undefined. */
  get(text: string): Date | undefined {
    for (let i = 0; i < this.slots; i += 1) {
      if (this.texts[i] === text) return new Date(this.ms[i]!);
    }
    return undefined;
  }

  put(text: string, ms: number): Date {
    this.texts[this.next] = text;
    this.ms[this.next] = ms;
    this.next = (this.next + 1) % this.slots;
    return new Date(ms);
  }
}
