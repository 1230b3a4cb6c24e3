"""Files that stand alone: SVG, PNG and PDF through Graphviz's renderer, and HTML pages with plotly.js
embedded."""
