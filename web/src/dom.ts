//! Small DOM helpers: find an element that must exist, fill a table body with text cells
//! (textContent only: nothing from the server is parsed as HTML).

export function element<T extends HTMLElement = HTMLElement>(id: string): T {
  const found = document.getElementById(id);
  if (!found) throw new Error(`The page lacks #${id}.`);
  return found as T;
}

export type Cell = string | Node;

export function row(cells: Cell[], attributes: Record<string, string> = {}): HTMLTableRowElement {
  const tr = document.createElement("tr");
  for (const [name, value] of Object.entries(attributes)) tr.setAttribute(name, value);
  for (const cell of cells) {
    const td = document.createElement("td");
    if (typeof cell === "string") td.textContent = cell;
    else td.append(cell);
    tr.append(td);
  }
  return tr;
}

export function fill(tableId: string, rows: HTMLTableRowElement[], empty: string): void {
  const body = element<HTMLTableElement>(tableId).tBodies[0];
  if (rows.length === 0) {
    const tr = document.createElement("tr");
    const td = document.createElement("td");
    td.colSpan = element<HTMLTableElement>(tableId).tHead?.rows[0]?.cells.length ?? 1;
    td.className = "empty";
    td.textContent = empty;
    tr.append(td);
    body.replaceChildren(tr);
  } else {
    body.replaceChildren(...rows);
  }
}

/** A button labelled `text` for sight and `label` for a screen reader, calling `onClick` with itself. */
export function button(text: string, label: string, onClick: (button: HTMLButtonElement) => void): HTMLButtonElement {
  const made = document.createElement("button");
  made.type = "button";
  made.textContent = text;
  made.setAttribute("aria-label", label);
  made.addEventListener("click", () => onClick(made));
  return made;
}

export function time(ms: number): string {
  return new Date(ms).toLocaleTimeString([], { hour12: false });
}

export function dateTime(ms: number): string {
  const date = new Date(ms);
  return `${date.toLocaleDateString()} ${date.toLocaleTimeString([], { hour12: false })}`;
}
