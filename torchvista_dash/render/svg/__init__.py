"""The picture under the figure's hit layer: SVG whose text follows the zoom, whole or cut into tiles."""
