//! The WGSL compute shader.

use std::fmt::Write;

use super::*;
use crate::kernel::wgsl::{Helper, Wgsl};

/// A variable's WGSL name: the Rust name with its id, so no WGSL keyword or
/// builtin can clash with it.
fn wname(k: &Kernel, v: usize) -> String {
    let name = crate::kernel::plain(&k.vars[v].name);
    if name.starts_with('_') { format!("v{v}") } else { format!("{name}_{v}") }
}

fn wgsl_ex(k: &Kernel, e: &Expr, out: &mut Wgsl) {
    match &e.kind {
        ExprKind::Float(v) => out.float(*v),
        ExprKind::Int(v, ty, _) => match ty.get() {
            // -2^31 has no positive literal: write it as an expression.
            Ty::I32 if *v == 1 << 31 => out.push_str("(-2147483647i - 1i)"),
            Ty::I32 => out.push_str(&format!("{v}i")),
            _ => out.push_str(&format!("{v}u")),
        },
        ExprKind::Bool(b) => out.push_str(if *b { "true" } else { "false" }),
        ExprKind::Var(v) => match k.vars[*v].kind {
            Kind::Scalar { index } => out.push_str(&format!("params.s{index}")),
            _ => out.push_str(&wname(k, *v)),
        },
        ExprKind::Index(v, i) => {
            out.push_str(&format!("{}[", wname(k, *v)));
            wgsl_ex(k, i, out);
            out.push(']');
        }
        ExprKind::Neg(x) | ExprKind::Not(x) => {
            out.push_str(if matches!(e.kind, ExprKind::Neg(_)) { "(-" } else { "(!" });
            wgsl_ex(k, x, out);
            out.push(')');
        }
        // u32 by a non-zero literal is defined everywhere: no helper.
        ExprKind::Binary(op @ (Bin::Div | Bin::Rem), a, b)
            if value_ty(k, a) == Ty::U32 && matches!(b.kind, ExprKind::Int(v, _, _) if v > 0) =>
        {
            out.push('(');
            wgsl_ex(k, a, out);
            out.push_str(&format!(" {} ", op.symbol()));
            wgsl_ex(k, b, out);
            out.push(')');
        }
        ExprKind::Binary(op, a, b) => {
            wgsl_binary(*op, value_ty(k, a), out, |out| wgsl_ex(k, a, out), |out| wgsl_ex(k, b, out))
        }
        ExprKind::Call(f, args) => out.call(*f, |i, out| wgsl_ex(k, &args[i], out)),
        ExprKind::Id(id) => out.push_str(match id {
            Id::Global => "gid.x",
            Id::Local => "lid.x",
            Id::Workgroup => "wid.x",
            Id::Workgroups => "nwg.x",
        }),
        ExprKind::Cast(x, t) => {
            match (value_ty(k, x), t) {
                (Ty::F32, Ty::I32) => out.helper(Helper::F32ToI32),
                (Ty::F32, Ty::U32) => out.helper(Helper::F32ToU32),
                _ => out.push_str(t.name()),
            }
            out.push('(');
            wgsl_ex(k, x, out);
            out.push(')');
        }
    }
}

/// Whether `a op= b`, `a` of type `ty`, is written other than `a op= b`.
fn needs_helper(op: Bin, ty: Ty) -> bool {
    matches!((op, ty), (Bin::Div, Ty::I32 | Ty::U32) | (Bin::Rem, _) | (Bin::Shl | Bin::Shr, _))
}

/// `a op b` in WGSL, with `a` of type `ty`: integer division and remainder
/// through helpers that define them on every backend, shift amounts masked
/// to five bits as WGSL defines (GLSL leaves larger shifts undefined).
fn wgsl_binary(op: Bin, ty: Ty, out: &mut Wgsl, a: impl FnOnce(&mut Wgsl), b: impl FnOnce(&mut Wgsl)) {
    let helper = match (op, ty) {
        (Bin::Div, Ty::I32) => Some(Helper::DivI32),
        (Bin::Rem, Ty::I32) => Some(Helper::RemI32),
        (Bin::Div, Ty::U32) => Some(Helper::DivU32),
        (Bin::Rem, Ty::U32) => Some(Helper::RemU32),
        _ => None,
    };
    if let Some(h) = helper {
        out.helper(h);
        out.push('(');
        a(out);
        out.push_str(", ");
        b(out);
        out.push(')');
        return;
    }
    if !matches!(op, Bin::Shl | Bin::Shr) {
        // Float comparisons and remainder take helpers there.
        out.binary(op, ty == Ty::F32, a, b);
        return;
    }
    out.push('(');
    a(out);
    out.push_str(&format!(" {} ", op.symbol()));
    if matches!(op, Bin::Shl | Bin::Shr) {
        out.push_str("(u32(");
        b(out);
        out.push_str(") & 31u)");
    } else {
        b(out);
    }
    out.push(')');
}

fn wgsl_block(k: &Kernel, stmts: &[Stmt], depth: usize, out: &mut Wgsl) {
    let pad = "    ".repeat(depth);
    for s in stmts {
        match s {
            Stmt::Let(v, e) => {
                let var = &k.vars[*v];
                let kw = if matches!(var.kind, Kind::Local { mutable: true }) { "var" } else { "let" };
                out.push_str(&format!("{pad}{kw} {}: {} = ", wname(k, *v), var.ty.name()));
                wgsl_ex(k, e, out);
                out.push_str(";\n");
            }
            Stmt::Assign(v, index, op, e, _) => {
                let target = |out: &mut Wgsl| {
                    out.push_str(&wname(k, *v));
                    if let Some(i) = index {
                        out.push('[');
                        wgsl_ex(k, i, out);
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
                        wgsl_binary(*op, ty, out, target, |out| wgsl_ex(k, e, out));
                    }
                    Some(op) => {
                        out.push_str(&format!(" {}= ", op.symbol()));
                        wgsl_ex(k, e, out);
                    }
                    None => {
                        out.push_str(" = ");
                        wgsl_ex(k, e, out);
                    }
                }
                out.push_str(";\n");
            }
            Stmt::If(c, a, b) => {
                out.push_str(&format!("{pad}if ("));
                wgsl_ex(k, c, out);
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
                wgsl_ex(k, c, out);
                out.push_str(") {\n");
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            Stmt::For(v, a, b, body) => {
                let n = wname(k, *v);
                out.push_str(&format!("{pad}for (var {n}: u32 = "));
                wgsl_ex(k, a, out);
                out.push_str(&format!("; {n} < "));
                wgsl_ex(k, b, out);
                out.push_str(&format!("; {n} += 1u) {{\n"));
                wgsl_block(k, body, depth + 1, out);
                out.push_str(&format!("{pad}}}\n"));
            }
            Stmt::Barrier(_) => out.push_str(&format!("{pad}workgroupBarrier();\n")),
        }
    }
}

/// The compute shader: buffer bindings in parameter order, then the
/// scalars in one uniform struct.
pub(super) fn wgsl(k: &Kernel) -> String {
    let mut out = String::new();
    let mut binding = 0;
    let mut scalars = Vec::new();
    for &p in &k.params {
        let var = &k.vars[p];
        match var.kind {
            Kind::Buffer { output, .. } => {
                let access = if output { "read_write" } else { "read" };
                let _ =
                    writeln!(out, "@group(0) @binding({binding}) var<storage, {access}> {}: array<f32>;", wname(k, p));
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
            let _ = writeln!(out, "var<workgroup> {}: array<f32, {len}>;", wname(k, i));
        }
    }
    let _ = writeln!(
        out,
        "\n@compute @workgroup_size({})\nfn {}(@builtin(global_invocation_id) gid: vec3<u32>, \
         @builtin(local_invocation_id) lid: vec3<u32>, @builtin(workgroup_id) wid: vec3<u32>, \
         @builtin(num_workgroups) nwg: vec3<u32>) {{",
        k.workgroup, k.name
    );
    let mut w = Wgsl::new(&k.name);
    w.out = out;
    wgsl_block(k, &k.body, 1, &mut w);
    w.push_str("}\n");
    w.finish()
}
