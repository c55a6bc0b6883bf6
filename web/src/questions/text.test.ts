import { describe, expect, it } from "vitest";
import { shown } from "./text";

describe("shown", () => {
  it("turns every bidirectional control into a visible marker", () => {
    const controls = [0x202a, 0x202b, 0x202c, 0x202d, 0x202e, 0x2066, 0x2067, 0x2068, 0x2069, 0x200e, 0x200f, 0x061c];
    for (const code of controls) {
      const hex = code.toString(16).toUpperCase().padStart(4, "0");
      expect(shown(`a${String.fromCharCode(code)}b`)).toBe(`a⟦U+${hex}⟧b`);
    }
  });

  it("leaves a spoofed question readable in its stored order", () => {
    // "Delete the repository? \u202Eon\u202C": an override would show "no".
    expect(shown("Delete the repository? \u202Eon\u202C")).toBe("Delete the repository? ⟦U+202E⟧on⟦U+202C⟧");
  });

  it("changes nothing else, right-to-left script included", () => {
    for (const text of ["Which database?", "קובץ חדש", "ملف جديد", "emoji 🙂 and zero\u200Bwidth space", ""]) {
      expect(shown(text)).toBe(text);
    }
  });
});
