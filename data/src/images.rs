//! Image folders in the class-per-subfolder layout of torchvision's
//! `ImageFolder` (`root/cat/001.png`, `root/dog/002.jpg`, ...): PNG and
//! JPEG files decoded once when the folder is opened (a file that does not
//! decode is an error naming it), resized to one size, kept in memory as
//! bytes, and batched as `[n, channels, height, width]` f32 with optional
//! training-time augmentation (random crop with padding, horizontal flip)
//! and per-channel normalisation.

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};

use image::imageops::FilterType;

use super::{Batch, DataError, Dataset};
use blaze_runtime::rng::Rng;
use blaze_runtime::{DataVec, TensorData};

/// Grey or colour.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ColorMode {
    /// One channel (luma).
    Gray,
    /// Three channels, red, green, blue.
    Rgb,
}

impl ColorMode {
    /// Channels per pixel.
    pub fn channels(self) -> usize {
        match self {
            ColorMode::Gray => 1,
            ColorMode::Rgb => 3,
        }
    }
}

/// Training-time augmentation, drawn anew for every sample of every batch.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct Augment {
    /// Pad each side by this many zero pixels, then crop a random window of
    /// the image's size (torchvision's `RandomCrop(size, padding)`); 0 for
    /// none.
    pub crop_padding: usize,
    /// Mirror left-right with probability one half
    /// (`RandomHorizontalFlip`); wrong for images whose meaning changes
    /// when mirrored, such as digits.
    pub horizontal_flip: bool,
}

/// The decoded images all samples share.
#[derive(Debug)]
struct Pixels {
    /// `[image][channel][row][column]` bytes.
    bytes: Vec<u8>,
    /// The file of each image.
    files: Vec<PathBuf>,
    /// The class of each image.
    labels: Vec<i64>,
}

/// The images of a class-per-subfolder tree, as a [`Dataset`] of
/// `[channels, height, width]` samples (values in `[0, 1]`, or normalised)
/// with class-index targets. Classes are the subfolder names in sorted
/// order. Subsets share the decoded images.
#[derive(Debug)]
pub struct ImageFolder {
    pixels: Arc<Pixels>,
    /// The images of this set, as indices into `pixels`.
    members: Vec<usize>,
    classes: Vec<String>,
    mode: ColorMode,
    size: (usize, usize),
    mean: Vec<f32>,
    std: Vec<f32>,
    augment: Option<Augment>,
    seed: u64,
    /// Batches drawn so far: each draws its augmentation from its own
    /// stream.
    draws: AtomicU64,
}

impl Clone for ImageFolder {
    fn clone(&self) -> Self {
        ImageFolder {
            draws: AtomicU64::new(self.draws.load(Ordering::Relaxed)),
            pixels: Arc::clone(&self.pixels),
            members: self.members.clone(),
            classes: self.classes.clone(),
            mean: self.mean.clone(),
            std: self.std.clone(),
            ..*self
        }
    }
}

impl ImageFolder {
    /// Opens `root`, whose subfolders are the classes, decoding every
    /// `.png`, `.jpg` and `.jpeg` file below each one (other files are
    /// skipped) and resizing it to `height` × `width` (bilinear). Errors
    /// name the folder or the file: no class folders, an empty class, a
    /// file that does not decode.
    pub fn open(root: &Path, mode: ColorMode, height: usize, width: usize) -> Result<Self, DataError> {
        assert!(height > 0 && width > 0, "ImageFolder::open: the size must be positive, got {height}x{width}");
        let io = |path: &Path, e| DataError::io(path, e);
        let mut classes: Vec<(String, PathBuf)> = Vec::new();
        for entry in std::fs::read_dir(root).map_err(|e| io(root, e))? {
            let entry = entry.map_err(|e| io(root, e))?;
            if entry.file_type().map_err(|e| io(&entry.path(), e))?.is_dir() {
                classes.push((entry.file_name().to_string_lossy().into_owned(), entry.path()));
            }
        }
        classes.sort();
        if classes.is_empty() {
            return Err(DataError::format(root, "no class folders (expected root/<class>/<image>)"));
        }
        let per = mode.channels() * height * width;
        let mut pixels = Pixels { bytes: Vec::new(), files: Vec::new(), labels: Vec::new() };
        for (label, (name, dir)) in classes.iter().enumerate() {
            let mut files: Vec<PathBuf> = Vec::new();
            for entry in std::fs::read_dir(dir).map_err(|e| io(dir, e))? {
                let path = entry.map_err(|e| io(dir, e))?.path();
                let ext = path.extension().and_then(|e| e.to_str()).map(str::to_ascii_lowercase);
                if matches!(ext.as_deref(), Some("png" | "jpg" | "jpeg")) {
                    files.push(path);
                }
            }
            if files.is_empty() {
                return Err(DataError::format(dir, format!("class `{name}` has no .png or .jpg images")));
            }
            files.sort();
            for file in files {
                let image =
                    image::open(&file).map_err(|e| DataError::format(&file, format!("not a readable image ({e})")))?;
                let image = image.resize_exact(width as u32, height as u32, FilterType::Triangle);
                let start = pixels.bytes.len();
                match mode {
                    ColorMode::Gray => pixels.bytes.extend_from_slice(image.to_luma8().as_raw()),
                    ColorMode::Rgb => {
                        // Interleaved RGB to planes.
                        let rgb = image.to_rgb8();
                        for c in 0..3 {
                            pixels.bytes.extend(rgb.as_raw().chunks_exact(3).map(|p| p[c]));
                        }
                    }
                }
                debug_assert_eq!(pixels.bytes.len() - start, per);
                pixels.files.push(file);
                pixels.labels.push(label as i64);
            }
        }
        let channels = mode.channels();
        let members = (0..pixels.labels.len()).collect();
        Ok(ImageFolder {
            pixels: Arc::new(pixels),
            members,
            classes: classes.into_iter().map(|(n, _)| n).collect(),
            mode,
            size: (height, width),
            mean: vec![0.0; channels],
            std: vec![1.0; channels],
            augment: None,
            seed: 0,
            draws: AtomicU64::new(0),
        })
    }

    /// The class names, in index order.
    pub fn classes(&self) -> &[String] {
        &self.classes
    }

    /// The file of sample `i`.
    pub fn file(&self, i: usize) -> &Path {
        &self.pixels.files[self.members[i]]
    }

    /// The class index of every sample, in order.
    pub fn labels(&self) -> Vec<i64> {
        self.members.iter().map(|&m| self.pixels.labels[m]).collect()
    }

    /// The samples at `indices` (of this set), sharing the decoded images,
    /// with this set's normalisation and augmentation.
    pub fn subset(&self, indices: &[usize]) -> Self {
        if let Some(&bad) = indices.iter().find(|&&i| i >= self.members.len()) {
            panic!("ImageFolder::subset: index {bad} is out of range for {} images", self.members.len());
        }
        ImageFolder { members: indices.iter().map(|&i| self.members[i]).collect(), ..self.clone() }
    }

    /// The images cut at random into a training part and a validation
    /// part of `val_fraction` of them, as
    /// [`InMemoryDataset::split_validation`](super::InMemoryDataset::split_validation)
    /// cuts a dataset; both keep this set's normalisation and
    /// augmentation. An error unless each part gets an image.
    pub fn split_validation(&self, val_fraction: f64, seed: u64) -> Result<(Self, Self), DataError> {
        let (train, val) = super::prepare::checked_train_val_split(self.len(), val_fraction, seed)?;
        Ok((self.subset(&train), self.subset(&val)))
    }

    /// Augments every batch as `augment` says, drawing from `seed`.
    pub fn augment(mut self, augment: Augment, seed: u64) -> Self {
        self.augment = Some(augment);
        self.seed = seed;
        self
    }

    /// Maps each channel's values `v` in `[0, 1]` to `(v - mean) / std`
    /// (torchvision's `Normalize`).
    pub fn normalize(mut self, mean: &[f32], std: &[f32]) -> Self {
        let c = self.mode.channels();
        assert!(
            mean.len() == c && std.len() == c && std.iter().all(|&s| s > 0.0),
            "ImageFolder::normalize: {c} channels need {c} means and {c} positive deviations, got {mean:?} and {std:?}"
        );
        self.mean = mean.to_vec();
        self.std = std.to_vec();
        self
    }

    /// Each channel's mean and standard deviation over this set's images
    /// (values in `[0, 1]`): compute them on the training split and
    /// normalise every split with them.
    pub fn channel_stats(&self) -> (Vec<f32>, Vec<f32>) {
        let (c, hw) = (self.mode.channels(), self.size.0 * self.size.1);
        let mut sums = vec![(0.0f64, 0.0f64); c];
        for &m in &self.members {
            let image = &self.pixels.bytes[m * c * hw..(m + 1) * c * hw];
            for (ch, plane) in image.chunks_exact(hw).enumerate() {
                for &b in plane {
                    let v = f64::from(b) / 255.0;
                    sums[ch].0 += v;
                    sums[ch].1 += v * v;
                }
            }
        }
        let n = (self.members.len() * hw).max(1) as f64;
        let mean: Vec<f32> = sums.iter().map(|s| (s.0 / n) as f32).collect();
        let std = sums.iter().map(|s| ((s.1 / n - (s.0 / n).powi(2)).max(0.0).sqrt().max(1e-6)) as f32).collect();
        (mean, std)
    }

    /// Writes sample `m`'s pixels, augmented by `rng` if asked, into `out`.
    fn write_sample(&self, m: usize, rng: Option<&mut Rng>, out: &mut Vec<f32>) {
        let (c, (h, w)) = (self.mode.channels(), self.size);
        let image = &self.pixels.bytes[m * c * h * w..(m + 1) * c * h * w];
        let (mut dy, mut dx, mut flip) = (0isize, 0isize, false);
        if let (Some(aug), Some(rng)) = (self.augment, rng) {
            let p = aug.crop_padding as u64;
            // The window's offset in the padded image, less the padding.
            dy = rng.below(2 * p + 1) as isize - p as isize;
            dx = rng.below(2 * p + 1) as isize - p as isize;
            flip = aug.horizontal_flip && rng.next_f64() < 0.5;
        }
        for ch in 0..c {
            let (mean, std) = (self.mean[ch], self.std[ch]);
            let plane = &image[ch * h * w..(ch + 1) * h * w];
            for y in 0..h {
                for x in 0..w {
                    let (sy, sx) = (y as isize + dy, if flip { (w - 1 - x) as isize } else { x as isize } + dx);
                    let inside = (0..h as isize).contains(&sy) && (0..w as isize).contains(&sx);
                    let v = if inside { f32::from(plane[sy as usize * w + sx as usize]) / 255.0 } else { 0.0 };
                    out.push((v - mean) / std);
                }
            }
        }
    }
}

impl Dataset for ImageFolder {
    fn len(&self) -> usize {
        self.members.len()
    }

    fn batch(&self, indices: &[usize]) -> Batch {
        let (c, (h, w)) = (self.mode.channels(), self.size);
        let mut x = Vec::with_capacity(indices.len() * c * h * w);
        let draw = self.draws.fetch_add(1, Ordering::Relaxed);
        let mut rng = self.augment.map(|_| Rng::seed_from_u64(self.seed ^ draw.wrapping_mul(0x9e37_79b9_7f4a_7c15)));
        for &i in indices {
            self.write_sample(self.members[i], rng.as_mut(), &mut x);
        }
        let y = indices.iter().map(|&i| self.pixels.labels[self.members[i]]).collect();
        Batch {
            inputs: TensorData { shape: vec![indices.len(), c, h, w], values: DataVec::F32(x) },
            targets: TensorData { shape: vec![indices.len()], values: DataVec::I64(y) },
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A folder of two classes of 4x4 images: `dark` all 0, `light` a
    /// gradient; plus whatever `extra` adds.
    fn folder(tag: &str, extra: impl Fn(&Path)) -> PathBuf {
        let root = std::env::temp_dir().join(format!("blaze-images-{tag}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&root);
        for (class, value) in [("dark", 0u8), ("light", 1)] {
            std::fs::create_dir_all(root.join(class)).expect("dir");
            for k in 0..3u8 {
                let img = image::GrayImage::from_fn(4, 4, |x, _| image::Luma([value * (60 * x as u8 + k)]));
                img.save(root.join(class).join(format!("{k}.png"))).expect("png");
            }
        }
        std::fs::write(root.join("light/notes.txt"), "not an image").expect("skipped");
        extra(&root);
        root
    }

    #[test]
    fn classes_in_order_pixels_as_stored_and_augmentation_that_moves_them() {
        let root = folder("good", |_| {});
        let set = ImageFolder::open(&root, ColorMode::Gray, 4, 4).expect("opens");
        assert_eq!((set.len(), set.classes()), (6, &["dark".to_owned(), "light".to_owned()][..]));
        assert_eq!(set.labels(), [0, 0, 0, 1, 1, 1]);
        let b = set.batch(&[3]);
        assert_eq!(b.inputs.shape, [1, 1, 4, 4]);
        let row: Vec<f32> = b.inputs.to_vec::<f32>().expect("f32")[..4].to_vec();
        assert_eq!(row, [0.0, 60.0 / 255.0, 120.0 / 255.0, 180.0 / 255.0]);
        // Flipping mirrors a row; the crop shifts it with zeros coming in.
        let flipped = set.clone().augment(Augment { crop_padding: 0, horizontal_flip: true }, 1);
        let rows: Vec<Vec<f32>> =
            (0..16).map(|_| flipped.batch(&[3]).inputs.to_vec::<f32>().expect("f32")[..4].to_vec()).collect();
        let mirrored: Vec<f32> = row.iter().rev().copied().collect();
        assert!(rows.contains(&row) && rows.contains(&mirrored), "{rows:?}");
        let shifted = set.clone().augment(Augment { crop_padding: 1, horizontal_flip: false }, 2);
        let any_shift = (0..16).any(|_| shifted.batch(&[3]).inputs.to_vec::<f32>().expect("f32")[..4] != row[..]);
        assert!(any_shift);
        // Statistics of the subset of light images, and normalisation.
        let light = set.subset(&[3, 4, 5]);
        let (mean, std) = light.channel_stats();
        let normal = light.normalize(&mean, &std);
        let all = normal.batch(&[0, 1, 2]).inputs.to_vec::<f32>().expect("f32");
        let m = all.iter().sum::<f32>() / all.len() as f32;
        assert!(m.abs() < 1e-5, "{m}");
        std::fs::remove_dir_all(&root).ok();
    }

    #[test]
    fn a_corrupt_image_or_an_empty_class_names_its_file() {
        let root = folder("corrupt", |r| std::fs::write(r.join("dark/broken.png"), b"\x89PNG not really").expect("w"));
        let err = ImageFolder::open(&root, ColorMode::Rgb, 4, 4).expect_err("corrupt").to_string();
        assert!(err.contains("broken.png: not a readable image"), "{err}");
        std::fs::remove_dir_all(&root).ok();
        let root = folder("empty", |r| std::fs::create_dir_all(r.join("zebra")).expect("dir"));
        let err = ImageFolder::open(&root, ColorMode::Gray, 4, 4).expect_err("empty class").to_string();
        assert!(err.contains("class `zebra` has no .png or .jpg images"), "{err}");
        std::fs::remove_dir_all(&root).ok();
    }
}
