"The figures the notebooks draw (returned, never saved: a notebook run changes no file of the course)."


def draw_tiling(tw=4, tiles=3, block=(1, 1), ph=1, thread=(2, 1)):
    """m, n and out as grids of tw x tw tiles, for one block (bx, by), one phase `ph` and one thread (tr, tc).

    Marks the tiles the block loads in phase `ph`, the elements the thread copies into shared memory
    (m[r, idx+tc] and n[idx+tr, c]), the row and column of the tiles it reads for its products, and its
    output element (r, c), with idx = ph*tw, r = by*tw + tr and c = bx*tw + tc."""
    import matplotlib.pyplot as plt
    from matplotlib.patches import Rectangle
    bx, by = block
    tr, tc = thread
    size, idx = tw * tiles, ph * tw
    r, c = by * tw + tr, bx * tw + tc
    fig, axs = plt.subplots(1, 3, figsize=(12, 4.6))

    def box(ax, x, y, w, h, **kw): ax.add_patch(Rectangle((x, y), w, h, **kw))

    for ax, name in zip(axs, ['m', 'n', 'out = m @ n']):
        ax.set_xlim(-0.2, size + 0.2); ax.set_ylim(size + 0.2, -0.2); ax.set_aspect('equal')
        ax.set_title(name, pad=22); ax.axis('off')
        for i in range(size + 1):
            lw = 1.6 if i % tw == 0 else 0.3
            ax.plot([i, i], [0, size], color='0.5', lw=lw); ax.plot([0, size], [i, i], color='0.5', lw=lw)
    m_ax, n_ax, o_ax = axs
    # the tiles this block loads in phase ph, the row / column of them this thread reads, its own elements
    box(m_ax, idx, by * tw, tw, tw, color='tab:blue', alpha=0.25)
    box(n_ax, bx * tw, idx, tw, tw, color='tab:orange', alpha=0.25)
    box(m_ax, idx, r, tw, 1, color='tab:blue', alpha=0.35)
    box(n_ax, c, idx, 1, tw, color='tab:orange', alpha=0.35)
    box(m_ax, idx + tc, r, 1, 1, color='tab:blue')
    box(n_ax, c, idx + tr, 1, 1, color='tab:orange')
    box(o_ax, bx * tw, by * tw, tw, tw, color='0.85')
    box(o_ax, c, r, 1, 1, color='0.2')
    # the names the kernel uses for these positions
    label = dict(fontsize=9, ha='center', va='center')
    m_ax.annotate('idx = ph*tw', (idx, 0), (idx, -1.0), arrowprops=dict(arrowstyle='->'), **label)
    m_ax.annotate('r = by*tw + tr', (0, r + 0.5), (-2.6, r + 0.5), arrowprops=dict(arrowstyle='->'), **label)
    m_ax.text(idx + tc + 0.5, r + 0.5, 'tc', color='w', **label)
    n_ax.annotate('c = bx*tw + tc', (c + 0.5, 0), (c + 0.5, -1.0), arrowprops=dict(arrowstyle='->'), **label)
    n_ax.annotate('idx', (0, idx), (-1.2, idx), arrowprops=dict(arrowstyle='->'), **label)
    n_ax.text(c + 0.5, idx + tr + 0.5, 'tr', color='w', **label)
    o_ax.text(c + 0.5, r + 0.5, 'r,c', color='w', fontsize=7, ha='center', va='center')
    o_ax.text(bx * tw + tw / 2, by * tw - 0.5, f'block ({bx}, {by})', **label)
    fig.suptitle(f"Phase ph={ph} of block (bx, by)=({bx}, {by}), tw={tw}: thread (tr, tc)=({tr}, {tc}) copies "
                 f"m[r, idx+tc] into ms[tr][tc] and n[idx+tr, c] into ns[tr][tc],\n"
                 f"then adds ms[tr][i] * ns[i][tc] for i < tw (the shaded row and column) to out[r, c]", fontsize=10)
    fig.tight_layout()
    return fig
