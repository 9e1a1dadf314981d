//! The WGSL compute shader.

use std::fmt::Write;

use crate::ir::{Kernel, Kind, Stmt, Ty};
use crate::wgsl::{Wgsl, binary, expr, name, needs_helper};

fn wgsl_block(k: &Kernel, stmts: &[Stmt], depth: usize, out: &mut Wgsl) {
    let pad = "    ".repeat(depth);
    for s in stmts {
        match s {
            Stmt::Let(v, e) => {
                let var = &k.vars[*v];
                let kw = if matches!(var.kind, Kind::Local { mutable: true }) { "var" } else { "let" };
                out.push_str(&format!("{pad}{kw} {}: {} = ", name(k, *v), var.ty.name()));
                expr(k, e, out);
                out.push_str(";\n");
            }
            Stmt::Assign(v, index, op, e, _) => {
                let target = |out: &mut Wgsl| {
                    out.push_str(&name(k, *v));
                    if let Some(i) = index {
                        out.push('[');
                        expr(k, i, out);
                        out.push(']');
                    }
                };
                out.push_str(&pad);
                target(out);
                let ty = if index.is_some() { Ty::F32 } else { k.vars[*v].ty };
                match op {
                    // `x op= v` becomes `x = x op v` where a helper applies.
                    Some(op) if needs_helper(*op, ty) => {
                        out.push_str(" = ");
                        binary(*op, ty, out, target, |out| expr(k, e, out));
                    }
                    Some(op) => {
                        out.push_str(&format!(" {}= ", op.symbol()));
                        expr(k, e, out);
                    }
                    None => {
                        out.push_str(" = ");
                        expr(k, e, out);
                    }
                }
                out.push_str(";\n");
            }
            Stmt::If(c, a, b) => {
                out.push_str(&format!("{pad}if ("));
                expr(k, c, out);
                out.push_str(") {\n");
                wgsl_block(k, a, depth + 1, out);
                if !b.is_empty() {
                    out.push_str(&format!("{pad}}} else {{\n"));
                    wgsl_block(k, b, depth + 1, out);
                }
                out.push_str(&format!("{pad}}}\n"));
            }
            Stmt::While(c, body) => {
                out.push_str(&format!("{pad}while ("));
                expr(k, c, out);
                out.push_str(") {\n");
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            Stmt::For(v, a, b, body) => {
                let n = name(k, *v);
                out.push_str(&format!("{pad}for (var {n}: u32 = "));
                expr(k, a, out);
                out.push_str(&format!("; {n} < "));
                expr(k, b, out);
                out.push_str(&format!("; {n} += 1u) {{\n"));
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            Stmt::Barrier(..) => out.push_str(&format!("{pad}workgroupBarrier();\n")),
        }
    }
}

/// The compute shader: buffer bindings in parameter order, then the
/// scalars in one uniform struct.
pub fn shader(k: &Kernel) -> String {
    let mut out = String::new();
    let mut binding = 0;
    let mut scalars = Vec::new();
    for &p in &k.params {
        let var = &k.vars[p];
        match var.kind {
            Kind::Buffer { output, .. } => {
                let access = if output { "read_write" } else { "read" };
                let _ =
                    writeln!(out, "@group(0) @binding({binding}) var<storage, {access}> {}: array<f32>;", name(k, p));
                binding += 1;
            }
            Kind::Scalar { index } => scalars.push(format!("    s{index}: {},\n", var.ty.name())),
            _ => {}
        }
    }
    if !scalars.is_empty() {
        let _ = writeln!(out, "struct Params {{\n{}}}", scalars.concat());
        let _ = writeln!(out, "@group(0) @binding({binding}) var<uniform> params: Params;");
    }
    for (i, v) in k.vars.iter().enumerate() {
        if let Kind::Shared { len } = v.kind {
            let _ = writeln!(out, "var<workgroup> {}: array<f32, {len}>;", name(k, i));
        }
    }
    let _ = writeln!(
        out,
        "\n@compute @workgroup_size({})\nfn {}(@builtin(global_invocation_id) gid: vec3<u32>, \
         @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, \
         @builtin(num_workgroups) nwg: vec3<u32>) {{",
        k.workgroup.unwrap_or(1),
        k.name
    );
    let mut w = Wgsl::new(&k.name);
    w.out = out;
    wgsl_block(k, &k.body, 1, &mut w);
    w.push_str("}\n");
    w.finish()
}
