import { csvLine } from '../shared/csv.ts';

/** A cell of a report: text, a count, or empty. */
export type ReportCell = string | number | null;

export interface ReportColumn {
  header: string;
  /** Width in the workbook, in characters. */
  width: number;
  /** Share of the PDF page's width, relative to the other columns'. */
  pdfWeight: number;
}

/**
 * A tabular report the three formats render alike: the same header and rows in the CSV, the
 * workbook's first sheet and the PDF's table, and the cover (what, whose, which version) on the
 * PDF's title page and the workbook's second sheet.
 */
export interface ReportTable {
  /** "Statement of Applicability": the PDF's title and the first sheet's name (at most 31 characters). */
  title: string;
  cover: { label: string; value: string }[];
  columns: ReportColumn[];
  rows: ReportCell[][];
  /** The footer of every PDF page, before "Page x of y". */
  footer: string;
  /** When the content was fixed: the files' own dates. */
  at: Date;
}

// exceljs and pdfkit are imported when a workbook or PDF is first rendered: together they load
// about 600 modules, which every process starting the service (and every test file) would pay.
const cellText = (cell: ReportCell): string | null => (cell === null ? null : String(cell));

/** RFC 4180 CSV with the formula-neutralising fields of every export, UTF-8 without a BOM. */
export function renderCsv(table: ReportTable): Buffer {
  const lines = [
    csvLine(table.columns.map((column) => column.header)),
    ...table.rows.map((row) => csvLine(row.map(cellText))),
  ];
  return Buffer.from(lines.join(''), 'utf8');
}

/**
 * An XLSX workbook: the table on the first sheet (header row bold and frozen, a filter on every
 * column, widths per column, long text wrapped) and the cover on an "About" sheet. exceljs writes
 * every text as a string cell, never as a formula.
 */
export async function renderXlsx(table: ReportTable): Promise<Buffer> {
  const { default: ExcelJS } = await import('exceljs');
  const workbook = new ExcelJS.Workbook();
  workbook.creator = 'Compliance workspace';
  workbook.created = table.at;
  workbook.modified = table.at;
  const sheet = workbook.addWorksheet(table.title, { views: [{ state: 'frozen', ySplit: 1 }] });
  sheet.columns = table.columns.map((column) => ({
    header: column.header,
    width: column.width,
    style: { alignment: { vertical: 'top', wrapText: column.width >= 30 } },
  }));
  sheet.getRow(1).font = { bold: true };
  for (const row of table.rows) sheet.addRow(row);
  sheet.autoFilter = { from: { row: 1, column: 1 }, to: { row: 1, column: table.columns.length } };
  const about = workbook.addWorksheet('About');
  about.columns = [
    { header: 'Field', width: 24 },
    { header: 'Value', width: 80 },
  ];
  about.getRow(1).font = { bold: true };
  for (const line of table.cover) about.addRow([line.label, line.value]);
  return Buffer.from(await workbook.xlsx.writeBuffer());
}

/**
 * The characters the PDF's standard Helvetica can show (Windows-1252): the rest would come out as
 * other glyphs, so they are shown as `?`; the CSV and the workbook keep the exact text.
 */
const WIN_ANSI_EXTRAS = new Set('€‚ƒ„…†‡ˆ‰Š‹ŒŽ‘’“”•–—˜™š›œžŸ');

function pdfText(value: string): string {
  let out = '';
  for (const character of value.replace(/\r\n?/g, '\n')) {
    const code = character.codePointAt(0) ?? 0;
    const shown =
      character === '\n' ||
      (code >= 0x20 && code <= 0x7e) ||
      (code >= 0xa0 && code <= 0xff) ||
      WIN_ANSI_EXTRAS.has(character);
    out += shown ? character : '?';
  }
  return out;
}

/** A cell longer than this is cut in the PDF (a row must fit on a page); the CSV and workbook have it all. */
const PDF_CELL_MAX = 700;

function pdfCell(cell: ReportCell): string {
  const text = pdfText(cellText(cell) ?? '');
  return text.length <= PDF_CELL_MAX ? text : `${text.slice(0, PDF_CELL_MAX - 1)}…`;
}

const MARGIN = 36;
const FONT_SIZE = 8;
const PADDING = 3;

/**
 * A paginated A4 landscape PDF: a title page with the cover, then the table with its header row
 * repeated on every page, and "Page x of y" on each page. The document's dates are the report's,
 * not the time of rendering.
 */
export async function renderPdf(table: ReportTable): Promise<Buffer> {
  const { default: PDFDocument } = await import('pdfkit');
  const doc = new PDFDocument({
    size: 'A4',
    layout: 'landscape',
    margin: MARGIN,
    bufferPages: true,
    info: {
      Title: pdfText(table.title),
      Creator: 'Compliance workspace',
      CreationDate: table.at,
      ModDate: table.at,
    },
  });
  const chunks: Buffer[] = [];
  doc.on('data', (chunk: Buffer) => chunks.push(chunk));
  const ended = new Promise<void>((resolve, reject) => {
    doc.on('end', resolve);
    doc.on('error', reject);
  });

  doc.font('Helvetica-Bold').fontSize(26).text(pdfText(table.title), { align: 'left' });
  doc.moveDown(1);
  for (const line of table.cover) {
    doc.font('Helvetica-Bold').fontSize(11).text(pdfText(line.label));
    doc.font('Helvetica').fontSize(11).text(pdfText(line.value));
    doc.moveDown(0.5);
  }

  const usable = doc.page.width - 2 * MARGIN;
  const totalWeight = table.columns.reduce((sum, column) => sum + column.pdfWeight, 0);
  const widths = table.columns.map((column) => (usable * column.pdfWeight) / totalWeight);
  const bottom = () => doc.page.height - MARGIN - 14;

  const heightOf = (cells: string[], font: string) => {
    doc.font(font).fontSize(FONT_SIZE);
    return (
      Math.max(
        ...cells.map((text, index) =>
          doc.heightOfString(text || ' ', { width: (widths[index] ?? 0) - 2 * PADDING }),
        ),
      ) +
      2 * PADDING
    );
  };
  const drawRow = (cells: string[], font: string, shaded: boolean) => {
    const height = heightOf(cells, font);
    const top = doc.y;
    if (shaded) doc.rect(MARGIN, top, usable, height).fill('#e8ecf1');
    doc.fillColor('#000000').font(font).fontSize(FONT_SIZE);
    let x = MARGIN;
    cells.forEach((text, index) => {
      const width = widths[index] ?? 0;
      doc.text(text, x + PADDING, top + PADDING, { width: width - 2 * PADDING, lineBreak: true });
      x += width;
    });
    doc
      .moveTo(MARGIN, top + height)
      .lineTo(MARGIN + usable, top + height)
      .lineWidth(0.5)
      .strokeColor('#9aa5b1')
      .stroke();
    doc.x = MARGIN;
    doc.y = top + height;
  };
  const header = table.columns.map((column) => pdfText(column.header));
  const newTablePage = () => {
    doc.addPage();
    drawRow(header, 'Helvetica-Bold', true);
  };

  newTablePage();
  for (const row of table.rows) {
    const cells = row.map(pdfCell);
    if (doc.y + heightOf(cells, 'Helvetica') > bottom()) newTablePage();
    drawRow(cells, 'Helvetica', false);
  }
  if (table.rows.length === 0)
    doc
      .font('Helvetica')
      .fontSize(10)
      .text('No rows.', MARGIN, doc.y + 6);

  const range = doc.bufferedPageRange();
  for (let index = 0; index < range.count; index++) {
    doc.switchToPage(range.start + index);
    // Writing below the bottom margin would start a new page: the footer sits in the margin.
    const margin = doc.page.margins.bottom;
    doc.page.margins.bottom = 0;
    doc
      .font('Helvetica')
      .fontSize(8)
      .fillColor('#52606d')
      .text(
        `${pdfText(table.footer)} · Page ${index + 1} of ${range.count}`,
        MARGIN,
        doc.page.height - MARGIN,
        {
          width: usable,
          align: 'center',
          lineBreak: false,
        },
      );
    doc.page.margins.bottom = margin;
  }
  doc.end();
  await ended;
  return Buffer.concat(chunks);
}
