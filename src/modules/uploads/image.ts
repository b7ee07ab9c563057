import { ApiError, validationError } from '../../http/errors.js';

/**
 * What an uploaded image is and what is stored of it (docs/uploads.md "Formats"). The type comes
 * from the bytes, never from the name or the declared Content-Type; every image is decoded and
 * encoded again by libvips (sharp), so what is stored is an image libvips wrote: no metadata, no
 * trailing bytes, nothing a browser could read as something else.
 */

/** The accepted formats: sharp's name → the stored type and extension. */
export const IMAGE_FORMATS = {
  jpeg: { contentType: 'image/jpeg', ext: 'jpg' },
  png: { contentType: 'image/png', ext: 'png' },
  gif: { contentType: 'image/gif', ext: 'gif' },
  webp: { contentType: 'image/webp', ext: 'webp' },
} as const;
export type ImageFormat = keyof typeof IMAGE_FORMATS;

/** The content type of a stored extension (the last part of a key). */
export const CONTENT_TYPE_OF_EXT: Readonly<Record<string, string>> = Object.fromEntries(
  Object.values(IMAGE_FORMATS).map((f) => [f.ext, f.contentType]),
);

/** Largest file accepted: 10 MB (issue 12). */
export const MAX_IMAGE_BYTES = 10 * 1024 * 1024;
/**
 * Most pixels decoded (width × height, × frames of an animation): a small file that would
 * decompress into gigabytes (a "decompression bomb") is refused before it is decoded. 50 million
 * covers a 48-megapixel phone photo; decoding it needs at most ~200 MB.
 */
export const MAX_PIXELS = 50_000_000;
/** JPEG and lossy WebP are encoded again at this quality (1–100): no visible loss. */
export const QUALITY = 90;
/** Images processed at once per process; more wait (each may need up to ~200 MB while decoded). */
const MAX_CONCURRENT = 2;
/** libvips gives up on one image after this. */
const TIMEOUT_SECONDS = 30;

let sharpLoaded: Promise<typeof import('sharp')> | undefined;
/**
 * sharp (libvips: ~25 MB resident once loaded) at the first image, not at start: most processes
 * never receive one (docs/performance.md "Memory").
 */
function loadSharp() {
  return (sharpLoaded ??= import('sharp').then((module) => {
    // Every input is new: sharp's operation cache would only hold memory.
    module.default.cache(false);
    return module;
  }));
}

/** The stored image. */
export interface ProcessedImage {
  format: ImageFormat;
  data: Buffer;
  width: number;
  /** Of one frame, for an animation. */
  height: number;
}

const ascii = (bytes: Buffer, from: number, to: number) => bytes.subarray(from, to).toString('latin1');

/** The accepted format the file's first bytes announce (magic numbers), if any. */
export function sniffImageFormat(bytes: Buffer): ImageFormat | undefined {
  if (bytes.length >= 3 && bytes[0] === 0xff && bytes[1] === 0xd8 && bytes[2] === 0xff) return 'jpeg';
  if (bytes.length >= 8 && bytes.subarray(0, 8).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]))) return 'png';
  if (bytes.length >= 6 && /^GIF8[79]a$/.test(ascii(bytes, 0, 6))) return 'gif';
  if (bytes.length >= 12 && ascii(bytes, 0, 4) === 'RIFF' && ascii(bytes, 8, 12) === 'WEBP') return 'webp';
  return undefined;
}

/** What a refused file looks like, for the message: the common cases by name. */
export function describeRefused(bytes: Buffer): string {
  const head = ascii(bytes, 0, 512).replace(/^\uFEFF|^\xEF\xBB\xBF/, '').trimStart().toLowerCase();
  if (bytes.length === 0) return 'an empty file';
  if (head.startsWith('<!doctype svg') || head.includes('<svg')) {
    return 'an SVG image (SVG can carry scripts and is not accepted)';
  }
  if (/^<!doctype html|^<html|^<head|^<body|^<script|^<!--/.test(head)) return 'an HTML document';
  if (ascii(bytes, 0, 4) === 'II*\0' || ascii(bytes, 0, 4) === 'MM\0*') return 'a TIFF image';
  if (ascii(bytes, 4, 8) === 'ftyp') {
    const brand = ascii(bytes, 8, 12);
    if (brand.startsWith('avi')) return 'an AVIF image';
    if (['heic', 'heix', 'hevc', 'hevx', 'mif1', 'msf1'].includes(brand)) return 'a HEIC/HEIF image';
    return 'a video or ISO media file';
  }
  if (ascii(bytes, 0, 2) === 'BM') return 'a BMP image';
  if (ascii(bytes, 0, 5) === '%PDF-') return 'a PDF document';
  if (bytes.length >= 4 && bytes.readUInt32BE(0) === 0x00000100) return 'an ICO icon';
  if (!bytes.subarray(0, 512).includes(0)) return 'text, not an image';
  return 'not a JPEG, PNG, GIF or WebP image';
}

const refuse = (field: string, message: string) => validationError([{ field, message, code: 'invalid_type' }]);

/** Whether a WebP file is lossless (a `VP8L` bitstream and no lossy `VP8 ` one): kept lossless. */
function isLosslessWebp(bytes: Buffer): boolean {
  return bytes.includes('VP8L', 12, 'latin1') && !bytes.includes('VP8 ', 12, 'latin1');
}

let running = 0;
const waiting: (() => void)[] = [];

/** Runs `work` when fewer than MAX_CONCURRENT images are being processed (first come, first served). */
async function limited<T>(work: () => Promise<T>): Promise<T> {
  // A finishing run hands its slot to the next waiter: `running` never goes over the limit.
  if (running >= MAX_CONCURRENT) await new Promise<void>((resolve) => waiting.push(resolve));
  else running++;
  try {
    return await work();
  } finally {
    const next = waiting.shift();
    if (next) next();
    else running--;
  }
}

/** sharp's message for an input over `limitInputPixels`. */
const isPixelLimit = (err: unknown) => err instanceof Error && /pixel limit/i.test(err.message);

/**
 * Checks that `bytes` is a JPEG, PNG, GIF or WebP image that decodes completely, and encodes it
 * again: EXIF orientation applied (the pixels turned, the tag gone), every metadata block dropped
 * (EXIF with GPS, XMP, IPTC, ICC profile — colours converted to sRGB —, comments, text chunks),
 * animation frames, delays and loop count kept. `field` names the form field in a 422.
 */
export async function processImage(bytes: Buffer, field: string): Promise<ProcessedImage> {
  const format = sniffImageFormat(bytes);
  if (!format) throw refuse(field, `The file is ${describeRefused(bytes)}: upload a JPEG, PNG, GIF or WebP image`);
  const name = format === 'jpeg' ? 'JPEG' : format === 'webp' ? 'WebP' : format.toUpperCase();
  const animated = format === 'gif' || format === 'webp';
  return limited(async () => {
    // Outside the try below: sharp failing to load is the server's fault, not the file's.
    const { default: sharp } = await loadSharp();
    try {
      // failOn 'error': truncated or corrupt pixel data is refused; warnings (extra bytes between
      // JPEG markers and the like, which browsers show) are not.
      const input = sharp(bytes, { failOn: 'error', limitInputPixels: MAX_PIXELS, animated, autoOrient: true }).timeout({ seconds: TIMEOUT_SECONDS });
      const meta = await input.metadata();
      if (meta.format !== format) throw refuse(field, `The file starts like a ${name} image but is not one: upload a JPEG, PNG, GIF or WebP image`);
      // Animations keep their frames, delays and loop count (sharp carries them over).
      const encoded =
        format === 'jpeg' ? input.jpeg({ quality: QUALITY, chromaSubsampling: meta.chromaSubsampling === '4:4:4' ? '4:4:4' : '4:2:0' })
        // A palette PNG stays one (exact: at most 256 colours, no dithering); truecolour stays truecolour.
        : format === 'png' ? input.png(meta.isPalette ? { palette: true, quality: 100, dither: 0 } : {})
        : format === 'gif' ? input.gif()
        : input.webp(isLosslessWebp(bytes) ? { lossless: true } : { quality: QUALITY, smartSubsample: true });
      const { data, info } = await encoded.toBuffer({ resolveWithObject: true });
      return { format, data, width: info.width, height: info.pageHeight ?? info.height };
    } catch (err) {
      if (err instanceof ApiError) throw err;
      if (isPixelLimit(err)) {
        throw refuse(field, `The image is too large: more than ${MAX_PIXELS.toLocaleString('en-US')} pixels (width × height × frames); scale it down before uploading`);
      }
      if (err instanceof Error && /timeout/i.test(err.message)) {
        throw refuse(field, `The image took longer than ${TIMEOUT_SECONDS} s to process; upload a smaller one`);
      }
      throw refuse(field, `The file is not a valid ${name} image (damaged or truncated): ${err instanceof Error ? err.message.split('\n')[0] : String(err)}`);
    }
  });
}
